import { createHash } from 'node:crypto';
import { BOUNDS, RUN_REASONS } from '@kruntimes/api';
import type { ResumeStatus } from '@kruntimes/api';
import type { Logger } from 'pino';
import type { ResolvedStore, StoreResolver } from './artifact-store.ts';
import { DEFAULT_STORE_RETRY_DELAYS_MS, StoreUnreadableError, readStoreRetrying } from './store-retry.ts';
import { checkpointKey } from './input-wait.ts';
import type { ReconcileContext, RunWork } from './run-work.ts';
import type { ResumeLoad } from './reconcile-types.ts';

export type { ResumeLoad } from './reconcile-types.ts';

/** What one read of the checkpoint object found. */
export type CheckpointRead = { type: 'found'; bytes: Buffer } | { type: 'missing' } | { type: 'larger' };

/**
 * Pure: the bytes read against status.resume.checkpoint. A checkpoint is verified here
 * as well as at AwaitInput: the object may have been replaced or removed since (someone
 * else's credentials, a retention bug), and the code must never resume from other bytes.
 */
export function decideResume(resume: ResumeStatus, read: CheckpointRead): ResumeLoad {
  const { checkpoint } = resume;
  const from = `the checkpoint of attempt ${String(checkpoint.attempt)}`;
  switch (read.type) {
    case 'missing':
      return { type: 'failed', reason: RUN_REASONS.artifactMissing, message: `${from} is not in the store` };
    case 'larger':
      return {
        type: 'failed',
        reason: RUN_REASONS.artifactInvalid,
        message: `${from} in the store is larger than the ${String(checkpoint.size)} bytes recorded`,
      };
    case 'found': {
      const digest = `sha256:${createHash('sha256').update(read.bytes).digest('hex')}`;
      if (read.bytes.length !== checkpoint.size || digest !== checkpoint.digest) {
        return {
          type: 'failed',
          reason: RUN_REASONS.artifactInvalid,
          message: `${from} in the store (${String(read.bytes.length)} bytes, ${digest}) is not the one recorded (${String(checkpoint.size)} bytes, ${checkpoint.digest})`,
        };
      }
      return {
        type: 'ready',
        resume: {
          checkpoint: read.bytes,
          checkpointAttempt: checkpoint.attempt,
          inputJson: resume.input,
          responseId: resume.responseId,
        },
      };
    }
  }
}

export interface CheckpointReaderOptions {
  stores: StoreResolver;
  retryDelaysMs?: readonly number[];
}

/**
 * Loads a continuation's checkpoint from the Run's ArtifactStore with runtimed's own
 * credentials, bounded by BOUNDS.checkpointBytes (it goes to the Runtime Server in one
 * message), retrying a store that cannot be read as the artifact verification does.
 */
export class CheckpointReader {
  readonly #stores: StoreResolver;
  readonly #delays: readonly number[];

  constructor(options: CheckpointReaderOptions) {
    this.#stores = options.stores;
    this.#delays = options.retryDelaysMs ?? DEFAULT_STORE_RETRY_DELAYS_MS;
  }

  async load({ run, epoch, log }: ReconcileContext, signal: AbortSignal): Promise<ResumeLoad> {
    const resume = run.status?.resume as ResumeStatus | undefined;
    if (resume === undefined) return { type: 'none' };
    const storeName = run.spec.artifacts?.store;
    if (storeName === undefined) {
      return {
        type: 'failed',
        reason: RUN_REASONS.artifactMissing,
        message: 'the Run continues from a checkpoint but declares no spec.artifacts store',
      };
    }
    const read = async (): Promise<ResumeLoad> => {
      const store = await this.#stores(epoch.namespace, storeName);
      return decideResume(resume, await readAtMost(store, checkpointKey(store, epoch, resume.checkpoint.attempt), BOUNDS.checkpointBytes));
    };
    try {
      const decision = await readStoreRetrying(read, { delaysMs: this.#delays, log, what: 'reading the checkpoint', signal });
      logLoaded(log, resume, decision);
      return decision;
    } catch (error) {
      if (!(error instanceof StoreUnreadableError)) throw error;
      return {
        type: 'interrupted',
        message: `could not read the checkpoint of attempt ${String(resume.checkpoint.attempt)} from store ${storeName} after ${error.message}`,
      };
    }
  }
}

function logLoaded(log: Logger, resume: ResumeStatus, decision: ResumeLoad): void {
  const fields = { checkpointAttempt: resume.checkpoint.attempt, responseId: resume.responseId };
  if (decision.type === 'ready') log.info({ ...fields, checkpointSize: resume.checkpoint.size }, 'continuing from the checkpoint');
  else if (decision.type === 'failed')
    log.warn({ ...fields, reason: decision.reason, why: decision.message }, 'the checkpoint cannot be used');
}

/** The object's bytes, at most `maxBytes` of them (more: `larger`, stopped as soon as the stream passes the bound). */
async function readAtMost(store: ResolvedStore, key: string, maxBytes: number): Promise<CheckpointRead> {
  const body = await store.objects.download(key);
  if (body === undefined) return { type: 'missing' };
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const bytes = chunk as Buffer;
      size += bytes.length;
      if (size > maxBytes) return { type: 'larger' };
      chunks.push(bytes);
    }
  } finally {
    body.destroy();
  }
  return { type: 'found', bytes: Buffer.concat(chunks, size) };
}

/**
 * The continuation could not start: a checkpoint that is missing or other bytes fails
 * the Run (not retried: the same object gives the same result); a store that could not
 * be read interrupts the attempt (retried only for a retrySafe task, as at exit 0).
 */
export async function resumeFailed(
  work: RunWork,
  ctx: ReconcileContext,
  load: Extract<ResumeLoad, { type: 'failed' | 'interrupted' }>,
): Promise<void> {
  if (load.type === 'interrupted') {
    await work.attemptFailed(ctx, `the continuation could not start: ${load.message}`, { interrupted: true });
    return;
  }
  const { key, epoch, log } = ctx;
  await work.options.workspaces.remove(epoch.uid);
  const written = await work.options.runs.transition(epoch, {
    type: 'Failed',
    reason: load.reason,
    message: `the continuation could not start: ${load.message}`,
  });
  work.forget(key, epoch);
  log.info({ phase: written.status?.phase, reason: load.reason }, 'the continuation could not start; not retried');
}
