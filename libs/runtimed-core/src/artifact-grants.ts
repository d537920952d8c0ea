import { randomBytes } from 'node:crypto';
import { BOUNDS, artifactObjectKey } from '@kruntimes/api';
import type { RunArtifacts } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import { artifactGrantsV1 } from '@kruntimes/proto';
import type { runtimeServerV1 } from '@kruntimes/proto';
import { checkListenAddress, errorMiddleware } from '@kruntimes/runtime-server-core';
import { createServer } from 'nice-grpc';
import type { Server } from 'nice-grpc';
import type { Logger } from 'pino';
import { decideGrant } from '@kruntimes/run-state';
import type { GrantInput, GrantRequest } from '@kruntimes/run-state';
import type { StoreResolver } from './artifact-store.ts';
import type { Epoch } from './epoch.ts';
import { NotOwnerError, StaleCacheError } from './run-client.ts';
import type { RunClient } from './run-client.ts';

/** Executions with a grant token at once: far more than one Pod runs (runsPerPod); past it the oldest token goes. */
const MAX_TOKENS = 1024;

export interface ArtifactGrantsOptions {
  /** Only `verify` is used: the fresh, fenced read that says whether the attempt is still current. */
  runs: Pick<RunClient, 'verify'>;
  stores: StoreResolver;
  /** When the Pod Lease expires as this process last renewed it (PodLease.expiresAtMs). */
  leaseExpiresAtMs(): number | undefined;
  logger: Logger;
  now?: () => number;
  /** Upper bound of a grant's lifetime; default DEFAULTS.artifactGrantSeconds. */
  maxGrantSeconds?: number;
}

interface TokenHolder {
  epoch: Epoch;
  store: string;
}

/**
 * The executions allowed to ask for upload grants, by their random token, and the
 * GrantUpload logic: for the attempt that holds the token, only while a fresh read of
 * the Run shows it current and owned by this Pod, only for what it declared, expiring
 * with the Pod Lease at the latest. The token identifies an execution to this service;
 * it is no credential of the store, and it never reaches the user code's environment.
 */
export class ArtifactGrants {
  readonly #o: ArtifactGrantsOptions;
  readonly #tokens = new Map<string, TokenHolder>();

  constructor(options: ArtifactGrantsOptions) {
    this.#o = options;
  }

  /** A new token for one execution of `epoch` (removed with `unregister` when it ends). */
  register(epoch: Epoch, artifacts: ReadonlyDeep<RunArtifacts>): { token: string; declared: runtimeServerV1.DeclaredArtifact[] } {
    if (this.#tokens.size >= MAX_TOKENS) {
      const oldest = this.#tokens.keys().next();
      if (oldest.done !== true) this.#tokens.delete(oldest.value);
      this.#o.logger.warn({ max: MAX_TOKENS }, 'too many grant tokens: the oldest was withdrawn');
    }
    const token = randomBytes(32).toString('base64url');
    this.#tokens.set(token, { epoch: { ...epoch }, store: artifacts.store });
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
    const { logger } = this.#o;
    const now = this.#o.now ?? Date.now;
    const holder = this.#tokens.get(request.grantToken);
    const attempt = holder === undefined ? ({ type: 'unknown' } as const) : await this.#attempt(holder.epoch);
    const upload: GrantRequest = {
      artifactId: request.artifactId,
      size: request.size,
      sha256: request.sha256,
      mediaType: request.mediaType,
    };
    const input: GrantInput = { request: upload, attempt, nowMs: now(), leaseExpiresAtMs: this.#o.leaseExpiresAtMs() };
    if (this.#o.maxGrantSeconds !== undefined) input.maxGrantSeconds = this.#o.maxGrantSeconds;
    const decision = decideGrant(input);
    const log = holder === undefined ? logger : logger.child({ runUID: holder.epoch.uid, attempt: holder.epoch.attempt });
    if (decision.type === 'refuse') {
      log.info({ code: decision.code, artifactId: truncated(request.artifactId), reason: decision.message }, 'upload grant refused');
      throw new KruntimesError(decision.code, decision.message);
    }
    // Refused above already; this narrows the type.
    if (holder === undefined) throw new KruntimesError('StaleAttempt', 'no running execution holds this grant token');
    const { epoch, store: storeName } = holder;
    const store = await this.#o.stores(epoch.namespace, storeName);
    const key = artifactObjectKey(store.prefix, epoch.namespace, epoch.uid, epoch.attempt, decision.artifactId);
    let presigned: Awaited<ReturnType<typeof store.objects.presignUpload>>;
    try {
      presigned = await store.objects.presignUpload(key, decision);
    } catch (error) {
      throw isKruntimesError(error)
        ? error
        : new KruntimesError('ArtifactStoreUnavailable', `presigning the upload failed: ${String(error)}`, { cause: error });
    }
    // The URL is a bearer capability for the upload: never logged.
    log.info(
      { artifactId: decision.artifactId, key, size: decision.size, expiresInSeconds: decision.expiresInSeconds },
      'upload grant issued',
    );
    return { url: presigned.url, method: presigned.method, headers: { ...presigned.headers }, expiresAt: presigned.expiresAt };
  }

  /** A fresh, fenced read: the attempt is current only while the live Run is this epoch, Running, and not being cancelled. */
  async #attempt(epoch: Epoch): Promise<GrantInput['attempt']> {
    try {
      const run = await this.#o.runs.verify(epoch, ['Running']);
      if (run.spec.cancelRequested === true) return { type: 'stale', why: 'its cancel was requested' };
      return { type: 'current', declared: run.spec.artifacts?.outputs ?? [] };
    } catch (error) {
      if (error instanceof NotOwnerError || error instanceof StaleCacheError) return { type: 'stale', why: error.message };
      if (isKruntimesError(error)) throw error;
      throw new KruntimesError('OwnerUnavailable', 'could not read the Run to confirm the attempt', { cause: error });
    }
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
    // Waiting for input (issue 18): served once runtimed implements it.
    grantCheckpoint: () => Promise.reject(new KruntimesError('Unimplemented', 'waiting for input is not implemented yet')),
    awaitInput: () => Promise.reject(new KruntimesError('Unimplemented', 'waiting for input is not implemented yet')),
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
