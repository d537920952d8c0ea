import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { API_GROUP_VERSION, RUN_KIND } from '@kruntimes/api';
import type { RunLock } from './lock.ts';
import type { LocalRunFile } from './run-file.ts';

/**
 * Where local mode keeps its state (docs/local-mode.md): `.krt/` beside the run file,
 * so that the same run file has the same lock and results from any working directory.
 *
 *   .krt/locks/<run file>.lock.json     the lock (commit it with the run file)
 *   .krt/cache/sha256/<hex>             source text read from the cluster at lock time
 *   .krt/runs/<id>/                     one local run: run.json, lock.json, status.json,
 *                                       stdout.log, stderr.log, artifacts/<artifact ID>
 */
export interface StatePaths {
  stateDir: string;
  lockFile: string;
  runsDir: string;
}

export function statePaths(runFile: string): StatePaths {
  const stateDir = join(dirname(resolve(runFile)), '.krt');
  return {
    stateDir,
    lockFile: join(stateDir, 'locks', `${basename(runFile)}.lock.json`),
    runsDir: join(stateDir, 'runs'),
  };
}

/** The cached text with this `sha256:<hex>` digest. */
export function cachedSourcePath(stateDir: string, digest: string): string {
  return join(stateDir, 'cache', 'sha256', digest.slice('sha256:'.length));
}

/** A new local run ID: UTC date and time, then 6 random hex digits (`20261204-153000-a1b2c3`; LOCAL_RUN_ID_PATTERN). */
export function newRunId(nowMs: number, random: () => string = () => randomBytes(3).toString('hex')): string {
  const iso = new Date(nowMs).toISOString();
  return `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${random()}`;
}

/** The files of one run directory. */
export const RUN_FILES = {
  run: 'run.json',
  lock: 'lock.json',
  status: 'status.json',
  stdout: 'stdout.log',
  stderr: 'stderr.log',
  artifacts: 'artifacts',
  /** The task's working directory while it runs (removed at its end, as runtimed removes the workspace). */
  workspace: 'workspace',
} as const;

/**
 * A new run directory `.krt/runs/<id>/` beside the run file, with the Run as it will run
 * (run.json: name, namespace, spec; no UID, no status) and a copy of the lock it is pinned by.
 */
export async function createRunDir(
  runFilePath: string,
  runFile: LocalRunFile,
  lock: RunLock,
  nowMs: number,
): Promise<{ runId: string; runDir: string }> {
  const runId = newRunId(nowMs);
  const runDir = join(statePaths(runFilePath).runsDir, runId);
  await mkdir(runDir, { recursive: true });
  const run = {
    apiVersion: API_GROUP_VERSION,
    kind: RUN_KIND,
    metadata: { name: runFile.name, ...(runFile.namespace === undefined ? {} : { namespace: runFile.namespace }) },
    spec: runFile.spec,
  };
  await writeFile(join(runDir, RUN_FILES.run), `${JSON.stringify(run, null, 2)}\n`);
  await writeFile(join(runDir, RUN_FILES.lock), `${JSON.stringify(lock, null, 2)}\n`);
  return { runId, runDir };
}
