import { randomBytes } from 'node:crypto';
import { BOUNDS, artifactObjectKey, runModeKind } from '@kruntimes/api';
import type { DeclaredArtifact, RunArtifacts, RuntimeCapability } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { artifactGrantsV1 } from '@kruntimes/proto';
import type { runtimeServerV1 } from '@kruntimes/proto';
import { checkListenAddress, errorMiddleware } from '@kruntimes/runtime-server-core';
import { createServer } from 'nice-grpc';
import type { Server } from 'nice-grpc';
import type { Logger } from 'pino';
import { decideGrant } from '@kruntimes/run-state';
import type { GrantInput, GrantRequest } from '@kruntimes/run-state';
import type { ResolvedStore, StoreResolver } from './artifact-store.ts';
import { decideAwaitInput, decideCheckpointGrant } from './checkpoint-decision.ts';
import type { CheckpointFacts, WaitingAttempt } from './checkpoint-decision.ts';
import type { Epoch } from './epoch.ts';
import { checkpointKey, recordWait, verifyCheckpoint } from './input-wait.ts';
import type { WaitingExecution } from './input-wait.ts';
import { NotOwnerError, StaleCacheError } from './run-client.ts';
import type { RunClient } from './run-client.ts';

/** Executions with a grant token at once: far more than one Pod runs (runsPerPod); past it the oldest token goes. */
const MAX_TOKENS = 1024;

export interface ArtifactGrantsOptions {
  /** `verify`: the fresh, fenced read that says whether the attempt is still current; `transition`: AwaitInput's WaitForInput. */
  runs: Pick<RunClient, 'verify' | 'transition'>;
  stores: StoreResolver;
  /** This runtimed's Runtime and its declared capabilities (checkpoint-v1: tasks may wait for input). */
  runtime: string;
  capabilities: readonly RuntimeCapability[];
  /** When the Pod Lease expires as this process last renewed it (PodLease.expiresAtMs). */
  leaseExpiresAtMs(): number | undefined;
  logger: Logger;
  now?: () => number;
  /** Upper bound of a grant's lifetime; default DEFAULTS.artifactGrantSeconds. */
  maxGrantSeconds?: number;
}

/** The fresh read's verdict, with what both grant kinds need of a current attempt. */
type LiveAttempt =
  Exclude<WaitingAttempt, { type: 'current' }> | (Extract<WaitingAttempt, { type: 'current' }> & { declared: readonly DeclaredArtifact[] });

interface TokenHolder {
  epoch: Epoch;
  store: string;
  /** The execution the token was given to (AwaitInput marks it); tests may register without one. */
  execution: WaitingExecution | undefined;
}

/**
 * The executions allowed to ask for upload grants, by their random token, and the
 * GrantUpload logic: for the attempt that holds the token, only while a fresh read of
 * the Run shows it current and owned by this Pod, only for what it declared, expiring
 * with the Pod Lease at the latest. The token identifies an execution to this service;
 * it is no credential of the store, and it never reaches the user code's environment.
 */
export class ArtifactGrants {
  readonly #options: ArtifactGrantsOptions;
  readonly #tokens = new Map<string, TokenHolder>();

  constructor(options: ArtifactGrantsOptions) {
    this.#options = options;
  }

  /** A new token for one execution of `epoch` (removed with `unregister` when it ends). */
  register(
    epoch: Epoch,
    artifacts: ReadonlyDeep<RunArtifacts>,
    execution?: WaitingExecution,
  ): { token: string; declared: runtimeServerV1.DeclaredArtifact[] } {
    if (this.#tokens.size >= MAX_TOKENS) {
      const oldest = this.#tokens.keys().next();
      if (oldest.done !== true) this.#tokens.delete(oldest.value);
      this.#options.logger.warn({ max: MAX_TOKENS }, 'too many grant tokens: the oldest was withdrawn');
    }
    const token = randomBytes(32).toString('base64url');
    this.#tokens.set(token, { epoch: { ...epoch }, store: artifacts.store, execution });
    const declared = artifacts.outputs.map((output) => ({
      artifactId: output.id,
      maxBytes: output.maxBytes,
      mediaType: output.mediaType,
      optional: output.optional === true,
    }));
    return { token, declared };
  }

  unregister(token: string): void {
    this.#tokens.delete(token);
  }

  /** How many tokens are registered (tests: none is left behind). */
  get size(): number {
    return this.#tokens.size;
  }

  async grantUpload(request: artifactGrantsV1.GrantUploadRequest): Promise<artifactGrantsV1.GrantUploadResponse> {
    const { logger } = this.#options;
    const now = this.#options.now ?? Date.now;
    const holder = this.#tokens.get(request.grantToken);
    const attempt = holder === undefined ? ({ type: 'unknown' } as const) : await this.#attempt(holder.epoch);
    const upload: GrantRequest = {
      artifactId: request.artifactId,
      size: request.size,
      sha256: request.sha256,
      mediaType: request.mediaType,
    };
    const input: GrantInput = { request: upload, attempt, nowMs: now(), leaseExpiresAtMs: this.#options.leaseExpiresAtMs() };
    if (this.#options.maxGrantSeconds !== undefined) input.maxGrantSeconds = this.#options.maxGrantSeconds;
    const decision = decideGrant(input);
    const log = holder === undefined ? logger : logger.child({ runUID: holder.epoch.uid, attempt: holder.epoch.attempt });
    if (decision.type === 'refuse') {
      log.info({ code: decision.code, artifactId: truncated(request.artifactId), reason: decision.message }, 'upload grant refused');
      throw new KruntimesError(decision.code, decision.message);
    }
    // Refused above already; this narrows the type.
    if (holder === undefined) throw new KruntimesError('StaleAttempt', 'no running execution holds this grant token');
    const { epoch, store: storeName } = holder;
    const store = await this.#options.stores(epoch.namespace, storeName);
    const key = artifactObjectKey(store.prefix, epoch.namespace, epoch.uid, epoch.attempt, decision.artifactId);
    const presigned = await presign(store, key, decision);
    // The URL is a bearer capability for the upload: never logged.
    log.info(
      { artifactId: decision.artifactId, key, size: decision.size, expiresInSeconds: decision.expiresInSeconds },
      'upload grant issued',
    );
    return { url: presigned.url, method: presigned.method, headers: { ...presigned.headers }, expiresAt: presigned.expiresAt };
  }

  /**
   * GrantCheckpoint: a presigned PUT of the attempt's checkpoint object, under the same
   * conditions as an upload grant, for a task Run that can wait for input here.
   */
  async grantCheckpoint(request: artifactGrantsV1.GrantCheckpointRequest): Promise<artifactGrantsV1.GrantCheckpointResponse> {
    const now = this.#options.now ?? Date.now;
    const holder = this.#tokens.get(request.grantToken);
    const attempt = holder === undefined ? ({ type: 'unknown' } as const) : await this.#waitingAttempt(holder.epoch);
    const input = {
      ...this.#checkpointFacts(attempt, request.size, request.sha256),
      nowMs: now(),
      leaseExpiresAtMs: this.#options.leaseExpiresAtMs(),
    };
    const decision = decideCheckpointGrant(
      this.#options.maxGrantSeconds === undefined ? input : { ...input, maxGrantSeconds: this.#options.maxGrantSeconds },
    );
    const log = this.#log(holder);
    // An unknown token is refused by the decision already; `holder` is checked for the type.
    if (decision.type === 'refuse' || holder === undefined) throw refused(log, decision, 'checkpoint grant refused');
    const store = await this.#options.stores(holder.epoch.namespace, decision.store);
    const key = checkpointKey(store, holder.epoch, holder.epoch.attempt);
    const presigned = await presign(store, key, decision);
    // The URL is a bearer capability for the upload: never logged.
    log.info({ key, size: decision.size, expiresInSeconds: decision.expiresInSeconds }, 'checkpoint grant issued');
    return { url: presigned.url, method: presigned.method, headers: { ...presigned.headers }, expiresAt: presigned.expiresAt };
  }

  /**
   * AwaitInput: the checks of GrantCheckpoint and a schema that compiles, the checkpoint
   * found in the store exactly as said, then WaitingInput written (fenced) with the
   * execution marked stopped on purpose. Answers only once the API server stored it.
   */
  async awaitInput(request: artifactGrantsV1.AwaitInputRequest): Promise<artifactGrantsV1.AwaitInputResponse> {
    const holder = this.#tokens.get(request.grantToken);
    const attempt = holder === undefined ? ({ type: 'unknown' } as const) : await this.#waitingAttempt(holder.epoch);
    const decision = decideAwaitInput({
      ...this.#checkpointFacts(attempt, request.checkpointSize, request.checkpointSha256),
      schemaJson: request.schemaJson,
    });
    const log = this.#log(holder);
    // An unknown token is refused by the decision already; `holder` is checked for the type.
    if (decision.type === 'refuse' || holder === undefined) throw refused(log, decision, 'waiting for input refused');
    const { epoch } = holder;
    try {
      await verifyCheckpoint(await this.#options.stores(epoch.namespace, decision.store), epoch, decision);
    } catch (error) {
      log.info(
        { code: isKruntimesError(error) ? error.code : undefined, reason: String(error) },
        'waiting for input refused: the checkpoint',
      );
      throw error;
    }
    await recordWait(this.#options.runs, epoch, holder.execution, decision, log);
    return { attempt: epoch.attempt };
  }

  /** A fresh, fenced read: the attempt is current only while the live Run is this epoch, Running, and not being cancelled. */
  async #attempt(epoch: Epoch): Promise<GrantInput['attempt']> {
    const live = await this.#waitingAttempt(epoch);
    return live.type === 'current' ? { type: 'current', declared: live.declared } : live;
  }

  async #waitingAttempt(epoch: Epoch): Promise<LiveAttempt> {
    try {
      const run = await this.#options.runs.verify(epoch, ['Running']);
      if (run.spec.cancelRequested === true) return { type: 'stale', why: 'its cancel was requested' };
      return {
        type: 'current',
        mode: runModeKind(run.spec),
        store: run.spec.artifacts?.store,
        declared: run.spec.artifacts?.outputs ?? [],
      };
    } catch (error) {
      if (error instanceof NotOwnerError || error instanceof StaleCacheError) return { type: 'stale', why: error.message };
      if (isKruntimesError(error)) throw error;
      throw new KruntimesError('OwnerUnavailable', 'could not read the Run to confirm the attempt', { cause: error });
    }
  }

  #checkpointFacts(attempt: WaitingAttempt, size: number, sha256: string): CheckpointFacts {
    return { attempt, size, sha256, capabilities: this.#options.capabilities, runtime: this.#options.runtime };
  }

  /** Never the token: the Run UID and attempt only. */
  #log(holder: TokenHolder | undefined): Logger {
    return holder === undefined
      ? this.#options.logger
      : this.#options.logger.child({ runUID: holder.epoch.uid, attempt: holder.epoch.attempt });
  }
}

/** The error answered for a refusal, logged with its code (no token, no URL). */
function refused(log: Logger, decision: { type: string; code?: ErrorCode; message?: string }, what: string): KruntimesError {
  const code = decision.code ?? 'StaleAttempt';
  const message = decision.message ?? 'no running execution holds this grant token';
  log.info({ code, reason: message }, what);
  return new KruntimesError(code, message);
}

/** Presigns one PUT; a failure that is not already typed is the store's. */
async function presign(
  store: ResolvedStore,
  key: string,
  upload: Parameters<ResolvedStore['objects']['presignUpload']>[1],
): Promise<Awaited<ReturnType<ResolvedStore['objects']['presignUpload']>>> {
  try {
    return await store.objects.presignUpload(key, upload);
  } catch (error) {
    throw isKruntimesError(error)
      ? error
      : new KruntimesError('ArtifactStoreUnavailable', `presigning the upload failed: ${String(error)}`, { cause: error });
  }
}

/** An ID from the request, bounded before it goes into a log line. */
function truncated(value: string): string {
  return value.length > BOUNDS.artifactIdBytes ? `${value.slice(0, BOUNDS.artifactIdBytes)}…` : value;
}

export interface RunningArtifactGrants {
  /** The bound address as the Runtime Server dials it (`host:port` with the real port, or `unix:/path`). */
  address: string;
  stop(): Promise<void>;
}

/**
 * Serves ArtifactGrants over plaintext gRPC on loopback or a unix socket only (the Pod's
 * containers share its network namespace; nothing outside the Pod may reach it). Errors
 * carry the kruntimes code in the `krt-error-code` trailer, as the Runtime Server's do.
 */
export async function startArtifactGrantsServer(grants: ArtifactGrants, listen: string, logger: Logger): Promise<RunningArtifactGrants> {
  const address = checkListenAddress(listen);
  const server: Server = createServer().use(errorMiddleware(logger));
  server.add(artifactGrantsV1.ArtifactGrantsDefinition, {
    grantUpload: (request) => grants.grantUpload(request),
    grantCheckpoint: (request) => grants.grantCheckpoint(request),
    awaitInput: (request) => grants.awaitInput(request),
  });
  const port = await server.listen(address);
  const bound = address.startsWith('unix:') ? address : `${address.slice(0, address.lastIndexOf(':'))}:${String(port)}`;
  return {
    address: bound,
    async stop() {
      await server.shutdown();
    },
  };
}
