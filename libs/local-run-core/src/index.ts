// Running a function locally (krt run --local) and syncing its result to the cluster.
export { executeLocally } from './local-run.ts';
export { createRunDir } from './run-dir.ts';
export { parseRunFile, resolveLanguage } from './run-file.ts';
export { readLocalResult, syncLocalResult, syncedRun } from './sync.ts';

// Lock files pinning a run's inputs.
export { lockDigest } from './lock.ts';
export { pinInputs } from './locking.ts';
