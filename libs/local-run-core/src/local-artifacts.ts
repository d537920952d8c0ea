import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DEFAULTS, RUN_REASONS } from '@kruntimes/api';
import { writeBoundedFile } from '@kruntimes/host';
import type { ArtifactRecord, RunArtifacts } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { artifactGrantsV1 } from '@kruntimes/proto';
import type { runtimeServerV1 } from '@kruntimes/proto';
import { checkManifest, decideGrant, summarizeProblems } from '@kruntimes/run-state';
import type { ArtifactProblem, ExpectedArtifact } from '@kruntimes/run-state';
import { errorMiddleware } from '@kruntimes/runtime-server-core';
import { createServer as createGrpcServer } from 'nice-grpc';
import type { Server as GrpcServer } from 'nice-grpc';
import type { Logger } from 'pino';
import type { ArtifactCheck } from './local-outcome.ts';

/** Loopback only: the Runtime Server dials the grants, user code PUTs to the receiver, both on this machine. */
const HOST = '127.0.0.1';
/** A PUT that has not arrived whole within this long is dropped. */
const PUT_TIMEOUT_MS = 15 * 60_000;

/** One upload granted and not yet used: exactly these bytes, before `expiresAtMs`. */
interface Grant {
  artifactId: string;
  size: number;
  sha256Hex: string;
  mediaType: string;
  expiresAtMs: number;
}

/**
 * krt's side of the artifacts protocol of a local run: it plays runtimed. It serves
 * `kruntimes.runtimed.v1.ArtifactGrants` on loopback and answers GrantUpload with the
 * same decision runtimed makes (run-state's decideGrant: declared ID and media type,
 * within maxBytes, a digest), granting a PUT to its own loopback receiver, which stores
 * the body under `artifacts/<artifactId>` only when its size and SHA-256 are the
 * granted ones (the bounds the store's signature enforces on the cluster). At exit 0,
 * `verify` checks the manifest against the declaration (run-state's checkManifest) and
 * each named file, as runtimed checks the store.
 */
export class LocalArtifacts {
  readonly #dir: string;
  readonly #declared: RunArtifacts;
  readonly #logger: Logger;
  readonly #grpc: GrpcServer;
  readonly #receiver: Server;
  readonly #grantAddress: string;
  readonly #receiverUrl: string;
  /** The execution's grant token; undefined once withdrawn (the execution ended). */
  #token: string | undefined = randomBytes(32).toString('base64url');
  /** By the random path segment of each grant's URL (a capability for one upload). */
  readonly #grants = new Map<string, Grant>();

  private constructor(dir: string, declared: RunArtifacts, logger: Logger, grpc: GrpcServer, grantPort: number, receiver: Server) {
    this.#dir = dir;
    this.#declared = declared;
    this.#logger = logger;
    this.#grpc = grpc;
    this.#receiver = receiver;
    this.#grantAddress = `${HOST}:${String(grantPort)}`;
    this.#receiverUrl = `http://${HOST}:${String((receiver.address() as AddressInfo).port)}`;
  }

  /** Starts the grants service and the receiver; uploads land in `dir`. */
  static async start(dir: string, declared: RunArtifacts, logger: Logger): Promise<LocalArtifacts> {
    await mkdir(dir, { recursive: true });
    const receiver = createServer({ requestTimeout: PUT_TIMEOUT_MS });
    await new Promise<void>((resolve, reject) => {
      receiver.once('error', reject);
      receiver.listen(0, HOST, () => {
        receiver.off('error', reject);
        resolve();
      });
    });
    const grpc = createGrpcServer().use(errorMiddleware(logger));
    // The service is added before the port (and so the instance) exists; no call can arrive before listen.
    const started: { artifacts?: LocalArtifacts } = {};
    grpc.add(artifactGrantsV1.ArtifactGrantsDefinition, {
      // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
      grantUpload: async (request) => {
        if (started.artifacts === undefined) throw new KruntimesError('OwnerUnavailable', 'not ready');
        return started.artifacts.#grantUpload(request);
      },
      // Waiting for input needs the platform (a RunInput answers it): not in local mode.
      grantCheckpoint: () => Promise.reject(new KruntimesError('CheckpointUnsupported', 'krt run --local does not wait for input')),
      awaitInput: () => Promise.reject(new KruntimesError('CheckpointUnsupported', 'krt run --local does not wait for input')),
    });
    const grantPort = await grpc.listen(`${HOST}:0`);
    const artifacts = new LocalArtifacts(dir, declared, logger, grpc, grantPort, receiver);
    started.artifacts = artifacts;
    receiver.on('request', (request: IncomingMessage, response: ServerResponse) => {
      void artifacts.#receive(request, response);
    });
    return artifacts;
  }

  /** ExecuteRequest.artifacts of the execution. */
  access(): runtimeServerV1.ArtifactAccess {
    return {
      grantAddress: this.#grantAddress,
      grantToken: this.#token ?? '',
      declared: this.#declared.outputs.map((output) => ({
        artifactId: output.id,
        maxBytes: output.maxBytes,
        mediaType: output.mediaType,
        optional: output.optional === true,
      })),
    };
  }

  /** The execution ended: its token and its unused grants are refused from now on. */
  withdraw(): void {
    this.#token = undefined;
    this.#grants.clear();
  }

  async close(): Promise<void> {
    this.withdraw();
    this.#grpc.forceShutdown();
    this.#receiver.closeAllConnections();
    await new Promise<void>((resolve) => {
      this.#receiver.close(() => {
        resolve();
      });
    });
  }

  #grantUpload(request: artifactGrantsV1.GrantUploadRequest): artifactGrantsV1.GrantUploadResponse {
    const now = Date.now();
    const known = this.#token !== undefined && sameSecret(request.grantToken, this.#token);
    const decision = decideGrant({
      request: { artifactId: request.artifactId, size: request.size, sha256: request.sha256, mediaType: request.mediaType },
      attempt: known ? { type: 'current', declared: this.#declared.outputs } : { type: 'unknown' },
      nowMs: now,
      // No Pod Lease here: krt itself is the owner for as long as the execution runs.
      leaseExpiresAtMs: now + (DEFAULTS.artifactGrantSeconds + 60) * 1000,
    });
    if (decision.type === 'refuse') {
      this.#logger.info(
        { code: decision.code, artifactId: request.artifactId.slice(0, 63), reason: decision.message },
        'upload grant refused',
      );
      throw new KruntimesError(decision.code, decision.message);
    }
    const expiresAtMs = now + decision.expiresInSeconds * 1000;
    const capability = randomBytes(24).toString('base64url');
    this.#grants.set(capability, {
      artifactId: decision.artifactId,
      size: decision.size,
      sha256Hex: decision.sha256Hex,
      mediaType: decision.mediaType,
      expiresAtMs,
    });
    // The URL is a capability for this one upload: never logged.
    this.#logger.info({ artifactId: decision.artifactId, size: decision.size }, 'upload grant issued');
    return {
      url: `${this.#receiverUrl}/uploads/${capability}/${decision.artifactId}`,
      method: 'PUT',
      headers: {
        'content-length': String(decision.size),
        'content-type': decision.mediaType,
        'x-amz-checksum-sha256': Buffer.from(decision.sha256Hex, 'hex').toString('base64'),
      },
      expiresAt: new Date(expiresAtMs),
    };
  }

  /** A PUT to a granted URL: stored only when it is exactly the granted bytes. */
  async #receive(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const answer = (status: number, message: string): void => {
      if (!response.headersSent) response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      response.end(`${message}\n`);
    };
    const match = /^\/uploads\/([A-Za-z0-9_-]{32})\/([^/?]+)$/.exec(request.url ?? '');
    const grant = match === null ? undefined : this.#grants.get(match[1] ?? '');
    if (request.method !== 'PUT' || grant === undefined || match?.[2] !== grant.artifactId || Date.now() > grant.expiresAtMs) {
      request.resume();
      answer(403, 'no such grant (unknown, used, expired, or the execution ended)');
      return;
    }
    const declaredLength = Number(request.headers['content-length']);
    if (request.headers['content-type'] !== grant.mediaType || declaredLength !== grant.size) {
      request.resume();
      answer(400, 'Content-Length and Content-Type must be the granted ones');
      return;
    }
    // One upload per grant, as a presigned URL is used once by the helper.
    this.#grants.delete(match[1] ?? '');
    const temp = join(this.#dir, `.upload-${randomBytes(6).toString('hex')}`);
    try {
      const stored = await writeBoundedFile(request, temp, grant.size);
      if (stored.size !== grant.size || stored.sha256Hex !== grant.sha256Hex) {
        await rm(temp, { force: true });
        answer(400, `BadDigest: the body is not the granted ${String(grant.size)} bytes with the granted sha256`);
        return;
      }
      await rename(temp, join(this.#dir, grant.artifactId));
      answer(200, 'stored');
    } catch (error) {
      await rm(temp, { force: true });
      this.#logger.warn({ err: error, artifactId: grant.artifactId }, 'storing an upload failed');
      answer(500, 'the upload could not be stored');
    }
  }

  /**
   * At exit 0: the manifest against the declaration, then each named file (exists,
   * size, SHA-256 computed again), as runtimed checks the store; files the manifest does
   * not name are removed once it passed.
   */
  async verify(manifest: readonly runtimeServerV1.ManifestEntry[]): Promise<ArtifactCheck> {
    const checked = checkManifest(this.#declared.outputs, manifest);
    const manifestProblem = summarizeProblems(checked.problems);
    if (manifestProblem !== undefined) return { type: 'failed', ...manifestProblem };
    const problems: ArtifactProblem[] = [];
    for (const artifact of checked.expected) {
      const problem = await this.#fileProblem(artifact);
      if (problem !== undefined) problems.push(problem);
    }
    const problem = summarizeProblems(problems);
    if (problem !== undefined) return { type: 'failed', ...problem };
    const records: ArtifactRecord[] = checked.expected.map(({ id, sha256Hex, size, mediaType }) => ({
      id,
      digest: `sha256:${sha256Hex}`,
      size,
      mediaType,
    }));
    const kept = new Set(records.map((record) => record.id));
    for (const name of await readdir(this.#dir)) if (!kept.has(name)) await rm(join(this.#dir, name), { force: true, recursive: true });
    return { type: 'verified', records };
  }

  async #fileProblem(artifact: ExpectedArtifact): Promise<ArtifactProblem | undefined> {
    const path = join(this.#dir, artifact.id);
    const found = await stat(path).catch(() => undefined);
    if (found === undefined)
      return { reason: RUN_REASONS.artifactMissing, message: `${artifact.id} is in the manifest but not in the store` };
    if (found.size !== artifact.size) {
      return {
        reason: RUN_REASONS.artifactInvalid,
        message: `${artifact.id}: the manifest says ${artifact.size} bytes, the store holds ${found.size}`,
      };
    }
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
    const sha256Hex = hash.digest('hex');
    if (sha256Hex !== artifact.sha256Hex) {
      return {
        reason: RUN_REASONS.artifactInvalid,
        message: `${artifact.id}: the manifest says sha256 ${artifact.sha256Hex} (${artifact.size} bytes), the stored object has ${sha256Hex} (${found.size} bytes)`,
      };
    }
    return undefined;
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
