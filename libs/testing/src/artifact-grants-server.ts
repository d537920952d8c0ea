import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ERROR_CODES } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import { ServerError, Status, createServer as createGrpcServer } from 'nice-grpc';
import type { CallContext } from 'nice-grpc';

/** One upload that reached the recording store. */
export interface RecordedPut {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly size: number;
  readonly sha256: string;
  /** The body itself, for checkpoints only (artifacts can be large). */
  readonly body: Buffer | undefined;
}

/** A typed refusal, as runtimed answers it: the code's gRPC status and the `krt-error-code` trailer. */
export interface StubRefusal {
  readonly code: ErrorCode;
  readonly message: string;
}

export interface ArtifactGrantsStub {
  /** gRPC address of the ArtifactGrants service (loopback host:port). */
  readonly address: string;
  /** Every GrantUpload request received. */
  readonly grants: artifactGrantsV1.GrantUploadRequest[];
  /** Every request that reached the store. */
  readonly puts: RecordedPut[];
  /** Grant tokens answered with StaleAttempt, as runtimed answers an attempt that is no longer current. */
  readonly staleTokens: Set<string>;
  /** Every GrantCheckpoint request received. */
  readonly checkpointGrants: artifactGrantsV1.GrantCheckpointRequest[];
  /** Every AwaitInput request received. */
  readonly awaits: artifactGrantsV1.AwaitInputRequest[];
  /** By grant token: GrantCheckpoint answers this refusal instead of a grant. */
  readonly checkpointRefusals: Map<string, StubRefusal>;
  /** By grant token: AwaitInput answers this refusal (after the request was recorded). */
  readonly awaitRefusals: Map<string, StubRefusal>;
  /** By grant token: the attempt AwaitInput answers (default 1). */
  readonly attempts: Map<string, number>;
  /** By grant token: AwaitInput answers only once this promise settles (after recording the request). */
  readonly awaitGates: Map<string, Promise<unknown>>;
  /** The checkpoint's path in the store for a grant token. */
  checkpointPath(grantToken: string): string;
  close(): Promise<void>;
}

/**
 * runtimed's side of the artifacts protocol for Runtime Server tests: a real gRPC
 * ArtifactGrants server whose grants point at a local HTTP "store" that records each
 * upload (method, headers, size and SHA-256 of the body) and answers 200. It presigns
 * nothing: the real presigning and the real object store are runtimed's tests.
 *
 * Waiting for input: GrantCheckpoint grants a PUT of `checkpointPath(token)`;
 * AwaitInput answers the token's attempt only when the store holds that object with the
 * size and SHA-256 named (else CheckpointNotStored), as runtimed verifies it.
 */
export async function startArtifactGrantsStub(host = '127.0.0.1'): Promise<ArtifactGrantsStub> {
  const grants: artifactGrantsV1.GrantUploadRequest[] = [];
  const puts: RecordedPut[] = [];
  const staleTokens = new Set<string>();
  const checkpointGrants: artifactGrantsV1.GrantCheckpointRequest[] = [];
  const awaits: artifactGrantsV1.AwaitInputRequest[] = [];
  const checkpointRefusals = new Map<string, StubRefusal>();
  const awaitRefusals = new Map<string, StubRefusal>();
  const attempts = new Map<string, number>();
  const awaitGates = new Map<string, Promise<unknown>>();
  /** Stored objects by path (without the query). */
  const objects = new Map<string, { size: number; sha256: string }>();
  const checkpointPath = (grantToken: string): string =>
    `/bucket/checkpoints/${createHash('sha256').update(grantToken).digest('hex').slice(0, 16)}/krt.checkpoint`;

  const store = createServer((request, response) => {
    const hash = createHash('sha256');
    const chunks: Buffer[] = [];
    let size = 0;
    const path = request.url ?? '';
    const isCheckpoint = path.startsWith('/bucket/checkpoints/');
    request.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      size += chunk.byteLength;
      if (isCheckpoint) chunks.push(chunk);
    });
    request.on('end', () => {
      const sha256 = hash.digest('hex');
      puts.push({
        method: request.method ?? '',
        path,
        headers: request.headers,
        size,
        sha256,
        body: isCheckpoint ? Buffer.concat(chunks) : undefined,
      });
      objects.set(path.split('?')[0] ?? '', { size, sha256 });
      response.writeHead(200, { 'content-length': 0 });
      response.end();
    });
  });
  const storePort = await listen(store, host);
  const grpc = createGrpcServer();
  grpc.add(artifactGrantsV1.ArtifactGrantsDefinition, {
    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    async grantUpload(request, context) {
      grants.push(request);
      if (staleTokens.has(request.grantToken)) {
        refuse(context, { code: 'StaleAttempt', message: 'attempt 1 of the Run is no longer current' });
      }
      return {
        url: `http://${host}:${String(storePort)}/bucket/${request.artifactId}?X-Amz-Expires=60`,
        method: 'PUT',
        headers: {
          'content-length': String(request.size),
          'content-type': request.mediaType,
          'x-amz-checksum-sha256': Buffer.from(request.sha256, 'hex').toString('base64'),
        },
        expiresAt: new Date(Date.now() + 60_000),
      };
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    async grantCheckpoint(request, context) {
      checkpointGrants.push(request);
      const refusal = checkpointRefusals.get(request.grantToken);
      if (refusal !== undefined) refuse(context, refusal);
      if (staleTokens.has(request.grantToken)) {
        refuse(context, { code: 'StaleAttempt', message: 'attempt 1 of the Run is no longer current' });
      }
      return {
        url: `http://${host}:${String(storePort)}${checkpointPath(request.grantToken)}?X-Amz-Expires=60`,
        method: 'PUT',
        headers: {
          'content-length': String(request.size),
          'content-type': 'application/octet-stream',
          'x-amz-checksum-sha256': Buffer.from(request.sha256, 'hex').toString('base64'),
        },
        expiresAt: new Date(Date.now() + 60_000),
      };
    },
    async awaitInput(request, context) {
      awaits.push(request);
      await awaitGates.get(request.grantToken);
      const refusal = awaitRefusals.get(request.grantToken);
      if (refusal !== undefined) refuse(context, refusal);
      const stored = objects.get(checkpointPath(request.grantToken));
      if (stored?.size !== request.checkpointSize || stored.sha256 !== request.checkpointSha256) {
        refuse(context, { code: 'CheckpointNotStored', message: 'the checkpoint object is not in the store as named' });
      }
      return { attempt: attempts.get(request.grantToken) ?? 1 };
    },
  });
  const grpcPort = await grpc.listen(`${host}:0`);
  return {
    address: `${host}:${String(grpcPort)}`,
    grants,
    puts,
    staleTokens,
    checkpointGrants,
    awaits,
    checkpointRefusals,
    awaitRefusals,
    attempts,
    awaitGates,
    checkpointPath,
    async close() {
      grpc.forceShutdown();
      store.closeAllConnections();
      await new Promise((resolve) => store.close(resolve));
    },
  };
}

function refuse(context: CallContext, refusal: StubRefusal): never {
  context.trailer.set(METADATA_KEYS.errorCode, refusal.code);
  context.trailer.set(METADATA_KEYS.errorSource, 'platform');
  throw new ServerError(Status[ERROR_CODES[refusal.code].grpc], refusal.message);
}

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      resolve((server.address() as AddressInfo).port);
    });
  });
}
