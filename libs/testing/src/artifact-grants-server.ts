import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import { ServerError, Status, createServer as createGrpcServer } from 'nice-grpc';

/** One upload that reached the recording store. */
export interface RecordedPut {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly size: number;
  readonly sha256: string;
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
  close(): Promise<void>;
}

/**
 * runtimed's side of the artifacts protocol for Runtime Server tests: a real gRPC
 * ArtifactGrants server whose grants point at a local HTTP "store" that records each
 * upload (method, headers, size and SHA-256 of the body) and answers 200. It presigns
 * nothing: the real presigning and the real object store are runtimed's tests.
 */
export async function startArtifactGrantsStub(host = '127.0.0.1'): Promise<ArtifactGrantsStub> {
  const grants: artifactGrantsV1.GrantUploadRequest[] = [];
  const puts: RecordedPut[] = [];
  const staleTokens = new Set<string>();
  const store = createServer((request, response) => {
    const hash = createHash('sha256');
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      size += chunk.byteLength;
    });
    request.on('end', () => {
      puts.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers, size, sha256: hash.digest('hex') });
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
        context.trailer.set(METADATA_KEYS.errorCode, 'StaleAttempt');
        context.trailer.set(METADATA_KEYS.errorSource, 'platform');
        throw new ServerError(Status.FAILED_PRECONDITION, 'attempt 1 of the Run is no longer current');
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
    grantCheckpoint(_request, context) {
      context.trailer.set(METADATA_KEYS.errorCode, 'Unimplemented');
      throw new ServerError(Status.UNIMPLEMENTED, 'this stub does not grant checkpoints');
    },
    awaitInput(_request, context) {
      context.trailer.set(METADATA_KEYS.errorCode, 'Unimplemented');
      throw new ServerError(Status.UNIMPLEMENTED, 'this stub does not await input');
    },
  });
  const grpcPort = await grpc.listen(`${host}:0`);
  return {
    address: `${host}:${String(grpcPort)}`,
    grants,
    puts,
    staleTokens,
    async close() {
      grpc.forceShutdown();
      store.closeAllConnections();
      await new Promise((resolve) => store.close(resolve));
    },
  };
}

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      resolve((server.address() as AddressInfo).port);
    });
  });
}
