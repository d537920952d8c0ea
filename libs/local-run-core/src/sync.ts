import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { API_GROUP_VERSION, LOCAL_RESULT_PHASES, ORIGIN_LABEL, RUN_KIND, isDns1123Subdomain, isLocalRunId } from '@kruntimes/api';
import type { LocalResultPhase, LocalRunResult, Run, RunOrigin, RunSpec } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import type { WriteResult } from '@kruntimes/run-client';
import { canonicalJson, lockDigest, parseLock } from './lock.ts';
import type { LocalStatus } from './local-outcome.ts';
import { RUN_FILES } from './run-dir.ts';

/** A local run's directory as `krt sync` reads it: nothing but run.json, lock.json and status.json. */
export interface LocalResult {
  runId: string;
  run: Run;
  lockDigest: string;
  status: LocalStatus;
}

/** `krt sync ID|DIR`: a run ID (looked up in `.krt/runs/` of the current directory) or a run directory. */
export async function readLocalResult(idOrDir: string, cwd: string): Promise<LocalResult> {
  const dir = isLocalRunId(idOrDir) ? join(cwd, '.krt', 'runs', idOrDir) : resolve(cwd, idOrDir);
  const runId = basename(dir);
  if (!isLocalRunId(runId))
    throw invalid(`${idOrDir} is neither a local run ID (like 20261204-153000-a1b2c3) nor a run directory .krt/runs/<id>`);
  if ((await stat(dir).catch(() => undefined))?.isDirectory() !== true)
    throw new KruntimesError('RunNotFound', `no local run directory ${dir}`);
  const read = async (file: string): Promise<string> =>
    readFile(join(dir, file), 'utf8').catch(() => {
      throw invalid(`${join(dir, file)} cannot be read: is ${dir} the directory of a finished local run?`);
    });
  const run = JSON.parse(await read(RUN_FILES.run)) as Run;
  const lock = parseLock(await read(RUN_FILES.lock));
  if (lock === undefined) throw invalid(`${join(dir, RUN_FILES.lock)} is not a lock file`);
  const status = JSON.parse(await read(RUN_FILES.status)) as LocalStatus;
  return { runId, run, lockDigest: lockDigest(lock), status };
}

/** The Run name of a synced local run: deterministic from its run ID, so a retried sync names the same Run. */
export function syncedRunName(name: string, runId: string): string {
  const suffix = `-${runId}`;
  const head = name.slice(0, 253 - suffix.length).replace(/[-.]+$/, '');
  const synced = `${head}${suffix}`;
  if (!isDns1123Subdomain(synced)) throw invalid(`cannot name the synced Run: ${JSON.stringify(synced)} is not a valid name`);
  return synced;
}

/**
 * The Run `krt sync` creates for a local result (pure): the local spec with spec.origin
 * recording the run ID, the lock digest and the result, labelled for the origin
 * controller; no status (the controller-manager writes the recorded one). Refused: a
 * run that did not end Succeeded, Failed or Timeout (an interrupted or cancelled local
 * run has no result to record), and a run that declares artifacts unless
 * `withoutArtifacts` (the synced Run then declares none and records none: krt sync does
 * not upload artifacts; docs/local-mode.md).
 */
export function syncedRun(result: LocalResult, options: { withoutArtifacts: boolean }): Run {
  const { status, run } = result;
  const phase = status.phase;
  if (phase === undefined || !(LOCAL_RESULT_PHASES as readonly string[]).includes(phase)) {
    throw invalid(`local run ${result.runId} ended ${phase ?? 'without a phase'}: only a Succeeded, Failed or Timeout result is synced`);
  }
  const { artifacts, ...specWithoutArtifacts } = run.spec;
  if (artifacts !== undefined && !options.withoutArtifacts) {
    throw invalid(
      `local run ${result.runId} declares artifacts (spec.artifacts), which krt sync does not upload: sync with --without-artifacts to record its result without them (the synced Run then declares no artifacts), or run it on the cluster`,
    );
  }
  const recorded: LocalRunResult = {
    phase: phase as LocalResultPhase,
    reason: status.reason ?? '',
    message: status.message ?? '',
    ...(status.exitCode === undefined ? {} : { exitCode: status.exitCode }),
    ...(status.outputs === undefined || Object.keys(status.outputs).length === 0 ? {} : { outputs: { ...status.outputs } }),
    startTime: status.startTime ?? '',
    completionTime: status.completionTime ?? '',
  };
  const origin: RunOrigin = { local: { runId: result.runId, lockDigest: result.lockDigest, result: recorded } };
  const spec: RunSpec = { ...specWithoutArtifacts, origin };
  return {
    apiVersion: API_GROUP_VERSION,
    kind: RUN_KIND,
    metadata: { name: syncedRunName(run.metadata.name ?? 'local', result.runId), labels: { [ORIGIN_LABEL]: 'local' } },
    spec,
  };
}

/**
 * A create that met AlreadyExists (pure): the same local run synced before (the same
 * origin) is that Run; any other Run with the name is a conflict, and nothing is changed.
 */
export function decideExisting(
  existing: Pick<Run, 'metadata' | 'spec'>,
  wanted: Pick<Run, 'metadata' | 'spec'>,
): { same: true } | { same: false; why: string } {
  if (existing.spec.origin === undefined) return { same: false, why: 'a Run executed by the platform (no spec.origin)' };
  if (canonicalJson(existing.spec.origin) !== canonicalJson(wanted.spec.origin)) {
    const other = existing.spec.origin.local;
    return {
      same: false,
      why:
        other.runId === wanted.spec.origin?.local.runId ? 'the same local run ID with another lock or result' : `local run ${other.runId}`,
    };
  }
  return { same: true };
}

/** Runs of one namespace as the user's kubeconfig reaches them. */
export interface SyncRuns {
  readonly namespace: string;
  /** The Run created, or AlreadyExists when the name is taken. */
  create(run: Run): Promise<WriteResult<Run, 'AlreadyExists'>>;
  get(name: string): Promise<Run>;
}

/**
 * Creates the synced Run once: a retried sync (the first one's answer lost, or run
 * twice) meets AlreadyExists and, when the existing Run records the same origin, reports
 * it instead of creating a second; another Run with the name is OriginConflict.
 */
export async function syncLocalResult(runs: SyncRuns, wanted: Run): Promise<{ run: Run; created: boolean }> {
  const created = await runs.create(wanted);
  if (created.ok) return { run: created.object, created: true };
  const name = wanted.metadata.name ?? '';
  const existing = await runs.get(name);
  const decision = decideExisting(existing, wanted);
  if (!decision.same) {
    throw new KruntimesError(
      'OriginConflict',
      `Run ${name} already exists in namespace ${runs.namespace} and records ${decision.why}; nothing was changed`,
    );
  }
  return { run: existing, created: false };
}

function invalid(message: string): KruntimesError {
  return new KruntimesError('InvalidRequest', message, { terminal: true });
}
