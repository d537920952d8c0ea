import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChannelCredentials } from '@grpc/grpc-js';
import { healthV1 } from '@kruntimes/proto';
import { createCertificateAuthority, issueWorkloadCertificate, runtimeIdentity } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { createChannel, createClient, createServer } from 'nice-grpc';
import type { Server } from 'nice-grpc';
import { pino } from 'pino';
import { peerIdentityInterceptor } from './peer-identity.ts';
import { TlsMaterial } from './tls-material.ts';

// Loopback TLS only: the point is what grpc-js does with the files, which no fake shows.
const IDENTITY = runtimeIdentity('ns', 'rt');
const logger = pino({ level: 'silent' });
let dir: string;
const servers: Server[] = [];
const materials: TlsMaterial[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tls-material-'));
});

afterEach(async () => {
  for (const server of servers.splice(0)) server.forceShutdown();
  for (const material of materials.splice(0)) material.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Writes the three files the way a Secret volume update does: new files, then one rename each. */
async function writeMaterial(ca: CertificateAuthority, runtime = 'rt', caPem = ca.certPem): Promise<void> {
  const leaf = await issueWorkloadCertificate(ca, { namespace: 'ns', runtime });
  for (const [file, pem] of [
    ['ca.crt', caPem],
    ['tls.crt', leaf.certPem],
    ['tls.key', leaf.keyPem],
  ] as const) {
    await writeFile(join(dir, `${file}.new`), pem);
    await rename(join(dir, `${file}.new`), join(dir, file));
  }
}

async function material(): Promise<TlsMaterial> {
  // A long poll: the test calls check() itself, so nothing depends on timing.
  const tls = new TlsMaterial({ dir, expectedIdentity: IDENTITY, logger, pollMs: 3_600_000 });
  materials.push(tls);
  await tls.start();
  return tls;
}

async function healthServer(tls: TlsMaterial, mutual: boolean): Promise<number> {
  const server = createServer();
  server.add(healthV1.HealthDefinition, {
    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    check: async () => ({ status: healthV1.HealthCheckResponse_ServingStatus.SERVING }),
    watch: async function* () {
      /* unused */
    },
  });
  servers.push(server);
  return server.listen('127.0.0.1:0', tls.serverCredentials(mutual, mutual ? [peerIdentityInterceptor(IDENTITY, () => undefined)] : []));
}

/** One call on a fresh channel (a new connection): 'ok' or the gRPC status code. */
async function call(port: number, credentials: ChannelCredentials): Promise<'ok' | number> {
  const channel = createChannel(`127.0.0.1:${port}`, credentials, { 'grpc.ssl_target_name_override': 'rt.ns.svc' });
  try {
    await createClient(healthV1.HealthDefinition, channel).check({ service: '' }, { signal: AbortSignal.timeout(10_000) });
    return 'ok';
  } catch (error) {
    return (error as { code: number }).code;
  } finally {
    channel.close();
  }
}

const trusting = (ca: CertificateAuthority) => ChannelCredentials.createSsl(Buffer.from(ca.certPem));

test('missing files: not loaded, and the TLS port drops connections until they appear', async () => {
  const tls = await material();
  expect(tls.loaded).toBe(false);
  const port = await healthServer(tls, false);
  const ca = await createCertificateAuthority();
  expect(await call(port, trusting(ca))).toBe(14);
  await writeMaterial(ca);
  await tls.check();
  expect(tls.loaded).toBe(true);
  expect(await call(port, trusting(ca))).toBe('ok');
});

test('new files: new connections get the new certificate (another CA here), and versions increase', async () => {
  const first = await createCertificateAuthority();
  await writeMaterial(first);
  const tls = await material();
  const port = await healthServer(tls, false);
  expect(tls.current?.version).toBe(1);
  expect(await call(port, trusting(first))).toBe('ok');

  const second = await createCertificateAuthority();
  await writeMaterial(second);
  await tls.check();
  expect(tls.current?.version).toBe(2);
  expect(await call(port, trusting(second))).toBe('ok');
  expect(await call(port, trusting(first))).toBe(14);
});

test.each([
  [
    'a certificate of another Runtime',
    async (ca: CertificateAuthority) => {
      await writeMaterial(ca, 'other');
    },
  ],
  [
    'a ca.crt that did not sign tls.crt',
    async (ca: CertificateAuthority) => {
      await writeMaterial(ca, 'rt', (await createCertificateAuthority()).certPem);
    },
  ],
  [
    'a key of another certificate',
    async (ca: CertificateAuthority) => {
      await writeMaterial(ca);
      await writeFile(join(dir, 'tls.key'), (await issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'rt' })).keyPem);
    },
  ],
])('%s is not accepted; the previous version stays', async (_name, write) => {
  const ca = await createCertificateAuthority();
  await writeMaterial(ca);
  const tls = await material();
  await write(ca);
  await tls.check();
  expect(tls.current?.version).toBe(1);
  expect(tls.current?.identity).toBe(IDENTITY);
});

test('mTLS port: a client certificate of this identity is served, another identity is refused, none fails the handshake', async () => {
  const ca = await createCertificateAuthority();
  await writeMaterial(ca);
  const tls = await material();
  const port = await healthServer(tls, true);
  const client = async (runtime: string) => {
    const leaf = await issueWorkloadCertificate(ca, { namespace: 'ns', runtime });
    return ChannelCredentials.createSsl(Buffer.from(ca.certPem), Buffer.from(leaf.keyPem), Buffer.from(leaf.certPem));
  };
  expect(await call(port, await client('rt'))).toBe('ok');
  expect(await call(port, await client('other'))).toBe(7);
  expect(await call(port, trusting(ca))).toBe(14);
});

test('client credentials accept only a server of the expected identity', async () => {
  const ca = await createCertificateAuthority();
  await writeMaterial(ca);
  const tls = await material();
  const port = await healthServer(tls, false);
  const snapshot = tls.current;
  if (snapshot === undefined) throw new Error('not loaded');
  expect(await call(port, TlsMaterial.channelCredentials(snapshot, IDENTITY))).toBe('ok');
  expect(await call(port, TlsMaterial.channelCredentials(snapshot, runtimeIdentity('ns', 'other')))).toBe(14);
});
