import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KruntimesError } from '@kruntimes/errors';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import { ServerError, Status, createServer } from 'nice-grpc';
import type { Server } from 'nice-grpc';
import { pino } from 'pino';
import type { DeclaredOutput } from './artifact-claims.ts';
import { ARTIFACT_REQUESTS_IN_FLIGHT, ARTIFACT_REQUEST_BYTES, ArtifactEndpoint, artifactEndpointHost } from './artifact-endpoint.ts';
import type { ArtifactSession } from './artifact-endpoint.ts';

const logger = pino({ level: 'silent' });
const DECLARED: DeclaredOutput[] = [{ id: 'out.txt', maxBytes: 100, mediaType: 'text/plain', optional: false }];
const CLAIM = { artifactId: 'out.txt', size: 3, sha256: 'c'.repeat(64) };

/** runtimed's side: answers by grant token; `slow` waits until released. */
let grpc: Server;
let grantAddress: string;
const waiting: (() => void)[] = [];
const release = (): void => {
  for (const resolve of waiting.splice(0)) resolve();
};

beforeAll(async () => {
  grpc = createServer();
  grpc.add(artifactGrantsV1.ArtifactGrantsDefinition, {
    async grantUpload(request, context) {
      if (request.grantToken === 'slow') {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
        });
      }
      if (request.grantToken === 'store-down') {
        context.trailer.set(METADATA_KEYS.errorCode, 'ArtifactStoreUnavailable');
        throw new ServerError(Status.UNAVAILABLE, 'cannot read Secret store-credentials');
      }
      return { url: 'http://127.0.0.1:1/k', method: 'PUT', headers: {}, expiresAt: new Date(60_000) };
    },
    grantCheckpoint() {
      throw new ServerError(Status.UNIMPLEMENTED, 'not used here');
    },
    awaitInput() {
      throw new ServerError(Status.UNIMPLEMENTED, 'not used here');
    },
  });
  grantAddress = `127.0.0.1:${String(await grpc.listen('127.0.0.1:0'))}`;
});

afterAll(() => {
  grpc.forceShutdown();
});

let endpoint: ArtifactEndpoint;
beforeEach(async () => {
  endpoint = await ArtifactEndpoint.start('127.0.0.1', logger);
});
afterEach(async () => {
  await endpoint.close();
});

async function post(session: ArtifactSession, path: string, body: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${session.env.KRT_ARTIFACTS_URL ?? ''}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session.env.KRT_ARTIFACTS_TOKEN ?? ''}` },
    body,
  });
  return { status: response.status, body: await response.json() };
}

describe('ArtifactEndpoint', () => {
  it('passes a grant through, and runtimed typed refusal with its code and status', async () => {
    const ok = endpoint.open({ grantAddress, grantToken: 'ok', declared: DECLARED }, logger);
    expect(await post(ok, '/v1/grants', JSON.stringify(CLAIM))).toEqual({
      status: 200,
      body: { url: 'http://127.0.0.1:1/k', method: 'PUT', headers: {}, expiresAt: '1970-01-01T00:01:00.000Z' },
    });
    const down = endpoint.open({ grantAddress, grantToken: 'store-down', declared: DECLARED }, logger);
    expect(await post(down, '/v1/grants', JSON.stringify(CLAIM))).toEqual({
      status: 503,
      body: { code: 'ArtifactStoreUnavailable', message: 'cannot read Secret store-credentials' },
    });
    ok.close();
    down.close();
  });

  it('answers OwnerUnavailable when runtimed cannot be reached', async () => {
    const closed = createNetServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const session = endpoint.open({ grantAddress: `127.0.0.1:${String(port)}`, grantToken: 't', declared: DECLARED }, logger);
    expect(await post(session, '/v1/grants', JSON.stringify(CLAIM))).toMatchObject({ status: 503, body: { code: 'OwnerUnavailable' } });
    session.close();
  });

  it('refuses a body over its bound and a body that is not JSON', async () => {
    const session = endpoint.open({ grantAddress, grantToken: 'ok', declared: DECLARED }, logger);
    const big = JSON.stringify({ ...CLAIM, pad: 'x'.repeat(ARTIFACT_REQUEST_BYTES) });
    expect(await post(session, '/v1/manifest', big)).toMatchObject({ status: 413, body: { code: 'PayloadTooLarge' } });
    expect(await post(session, '/v1/manifest', '{')).toMatchObject({ status: 400, body: { code: 'InvalidRequest' } });
    expect(session.close()).toEqual([]);
  });

  it('ends a session at once: a grant in flight is not handed out, the token is refused, the manifest is what was recorded', async () => {
    const session = endpoint.open({ grantAddress, grantToken: 'slow', declared: DECLARED }, logger);
    expect(await post(session, '/v1/manifest', JSON.stringify(CLAIM))).toMatchObject({ status: 200 });
    const inFlight = post(session, '/v1/grants', JSON.stringify(CLAIM));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(session.close()).toEqual([{ ...CLAIM, mediaType: 'text/plain' }]);
    release();
    expect(await inFlight).toMatchObject({ status: 401, body: { code: 'Unauthenticated' } });
    expect(await post(session, '/v1/manifest', JSON.stringify(CLAIM))).toMatchObject({ status: 401 });
  });

  it('refuses more requests of one execution at a time than its bound', async () => {
    const session = endpoint.open({ grantAddress, grantToken: 'slow', declared: DECLARED }, logger);
    const held = Array.from({ length: ARTIFACT_REQUESTS_IN_FLIGHT }, () => post(session, '/v1/grants', JSON.stringify(CLAIM)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await post(session, '/v1/manifest', JSON.stringify(CLAIM))).toMatchObject({ status: 429, body: { code: 'InvocationInFlight' } });
    session.close();
    release();
    for (const answer of await Promise.all(held)) expect(answer.status).toBe(401);
  });

  it('refuses what runtimed must not send: a non-loopback grant address, an empty token, a bad declaration', () => {
    const code = (run: () => unknown): string => {
      try {
        run();
        return 'ok';
      } catch (error) {
        return error instanceof KruntimesError ? error.code : 'thrown';
      }
    };
    expect(code(() => endpoint.open({ grantAddress: '10.0.0.1:7000', grantToken: 't', declared: DECLARED }, logger))).toBe(
      'InvalidRequest',
    );
    expect(code(() => endpoint.open({ grantAddress, grantToken: '', declared: DECLARED }, logger))).toBe('InvalidRequest');
    expect(code(() => endpoint.open({ grantAddress, grantToken: 't', declared: [] }, logger))).toBe('InvalidRequest');
  });

  it('listens on loopback only', async () => {
    await expect(ArtifactEndpoint.start('0.0.0.0', logger)).rejects.toMatchObject({ code: 'InvalidRequest' });
  });
});

describe('artifactEndpointHost', () => {
  it.each([
    ['127.0.0.5:0', '127.0.0.5'],
    ['[::1]:7450', '::1'],
    ['localhost:7450', '127.0.0.1'],
    ['unix:/run/krt.sock', '127.0.0.1'],
  ])('%s -> %s', (listen, host) => {
    expect(artifactEndpointHost(listen)).toBe(host);
  });
});
