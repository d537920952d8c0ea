// runtimed's ArtifactGrants over real gRPC on loopback, against the real API server:
// a grant is for the attempt that is current and owned now, for what it declared, and
// every refusal carries its kruntimes code in the `krt-error-code` trailer.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunArtifacts, RunSpec } from '@kruntimes/api';
import { artifactGrantsV1 } from '@kruntimes/proto';
import { METADATA_KEYS } from '@kruntimes/proto';
import { transition } from '@kruntimes/run-state';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { pino } from 'pino';
import { ArtifactGrants, startArtifactGrantsServer } from '../src/artifact-grants.ts';
import type { RunningArtifactGrants } from '../src/artifact-grants.ts';
import type { StoreResolver } from '../src/artifact-store.ts';
import type { Epoch } from '../src/epoch.ts';
import { RunClient } from '../src/run-client.ts';

const cluster = Cluster.fromEnvironment();
const objects = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
const POD_UID = '00000000-0000-4000-8000-0000000000a7';
const logger = pino({ level: 'silent' });
const SHA = 'c'.repeat(64);
const ARTIFACTS: RunArtifacts = {
  store: 'results',
  outputs: [
    { id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' },
    { id: 'plot.png', maxBytes: 64, mediaType: 'image/png', optional: true },
  ],
};

let namespace: TestNamespace;
let runs: RunClient;
let leaseExpiresAtMs: number | undefined;
let stores: StoreResolver;
let grants: ArtifactGrants;
let server: RunningArtifactGrants;
let channel: Channel;
let client: Client<artifactGrantsV1.ArtifactGrantsDefinition>;

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'artifact-grants' });
  runs = new RunClient(cluster.kubeConfig());
  stores = () => Promise.reject(new Error('no store in this test'));
  grants = new ArtifactGrants({
    runs,
    stores: (ns, name) => stores(ns, name),
    leaseExpiresAtMs: () => leaseExpiresAtMs,
    runtime: 'python',
    capabilities: [],
    logger,
  });
  server = await startArtifactGrantsServer(grants, '127.0.0.1:0', logger);
  channel = createChannel(server.address);
  client = createClient(artifactGrantsV1.ArtifactGrantsDefinition, channel);
});
afterAll(async () => {
  channel.close();
  await server.stop();
  await namespace.delete();
});
beforeEach(() => {
  leaseExpiresAtMs = Date.now() + 90_000;
});

const target = () => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural: RUN_PLURAL });

/** A task Run with spec.artifacts, bound to POD_UID and claimed: its attempt 1 is running on "this" Pod. */
async function runningTask(name: string, extra: Partial<RunSpec> = {}): Promise<Epoch> {
  const created = (await objects.createNamespacedCustomObject({
    ...target(),
    body: {
      apiVersion: API_GROUP_VERSION,
      kind: 'Run',
      metadata: { name },
      spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} }, artifacts: ARTIFACTS, ...extra },
    },
  })) as Run;
  return claimed(created);
}

/** What the scheduler and then this Pod's runtimed do with a Pending Run: bind it to POD_UID, claim it. */
async function claimed(run: Run): Promise<Epoch> {
  const name = run.metadata.name ?? '';
  const bound = transition({
    run,
    event: { type: 'Bind', pod: 'pod-a', podUID: POD_UID },
    writer: 'scheduler',
    now: new Date().toISOString(),
  });
  if (!bound.ok) throw bound.error;
  await objects.replaceNamespacedCustomObjectStatus({ ...target(), name, body: { ...run, status: bound.status } });
  const epoch: Epoch = {
    namespace: namespace.name,
    name,
    uid: run.metadata.uid ?? '',
    attempt: bound.status.attempt ?? 0,
    podUID: POD_UID,
  };
  await runs.transition(epoch, { type: 'Claim' });
  return epoch;
}

/** GrantUpload as the Runtime Server calls it; a refusal comes back as its kruntimes code and message. */
async function grantUpload(
  request: Partial<artifactGrantsV1.GrantUploadRequest> & { grantToken: string },
): Promise<artifactGrantsV1.GrantUploadResponse | { code: string | undefined; message: string }> {
  let trailer = Metadata();
  try {
    return await client.grantUpload(
      { artifactId: 'report.csv', size: 10, sha256: SHA, mediaType: 'text/csv', ...request },
      {
        onTrailer: (t) => {
          trailer = t;
        },
      },
    );
  } catch (error) {
    if (!(error instanceof ClientError)) throw error;
    return { code: trailer.get(METADATA_KEYS.errorCode), message: error.details };
  }
}

describe('refusals', () => {
  test('an unknown token: StaleAttempt', async () => {
    expect(await grantUpload({ grantToken: 'not-a-token' })).toEqual({
      code: 'StaleAttempt',
      message: 'no running execution holds this grant token',
    });
  });

  test('an undeclared artifact or another media type: ArtifactNotDeclared; over maxBytes: ArtifactTooLarge', async () => {
    const epoch = await runningTask('declared');
    const { token } = grants.register(epoch, ARTIFACTS);
    try {
      expect(await grantUpload({ grantToken: token, artifactId: 'secret.txt' })).toMatchObject({ code: 'ArtifactNotDeclared' });
      expect(await grantUpload({ grantToken: token, mediaType: 'text/plain' })).toMatchObject({
        code: 'ArtifactNotDeclared',
        message: 'artifact report.csv is declared as text/csv, not "text/plain"',
      });
      expect(await grantUpload({ grantToken: token, size: 1025 })).toMatchObject({
        code: 'ArtifactTooLarge',
        message: 'artifact report.csv: 1025 bytes is over its maxBytes 1024',
      });
      expect(await grantUpload({ grantToken: token, sha256: 'nothex' })).toMatchObject({ code: 'InvalidRequest' });
    } finally {
      grants.unregister(token);
    }
  });

  test('a Lease already past: OwnerUnavailable', async () => {
    const epoch = await runningTask('lease-past');
    const { token } = grants.register(epoch, ARTIFACTS);
    leaseExpiresAtMs = Date.now() - 1;
    expect(await grantUpload({ grantToken: token })).toMatchObject({ code: 'OwnerUnavailable' });
    grants.unregister(token);
  });

  test('the attempt moved on (requeued to attempt 2), was cancelled, or ended: StaleAttempt; a withdrawn token too', async () => {
    // Only a retrySafe task gets another attempt.
    const requeued = await runningTask('requeued', { retryPolicy: { maxAttempts: 2, retrySafe: true } });
    const first = grants.register(requeued, ARTIFACTS);
    await runs.transition(requeued, { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 0, message: 'attempt 1: exited 1' });
    expect(await grantUpload({ grantToken: first.token })).toMatchObject({
      code: 'StaleAttempt',
      message: expect.stringContaining('attempt 1 is no longer owned by Pod') as string,
    });
    // Attempt 2 runs on the same Pod: attempt 1's token still gets nothing.
    const second2 = await claimed((await runs.get(namespace.name, 'requeued'))!);
    expect(second2.attempt).toBe(2);
    expect(await grantUpload({ grantToken: first.token })).toMatchObject({
      code: 'StaleAttempt',
      message: expect.stringContaining('now at attempt 2') as string,
    });

    const cancelling = await runningTask('cancelling');
    const second = grants.register(cancelling, ARTIFACTS);
    await objects.patchNamespacedCustomObject({
      ...target(),
      name: 'cancelling',
      body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
    });
    expect(await grantUpload({ grantToken: second.token })).toMatchObject({
      code: 'StaleAttempt',
      message: 'the attempt is no longer current: its cancel was requested',
    });

    const ended = await runningTask('ended');
    const third = grants.register(ended, ARTIFACTS);
    await runs.transition(ended, { type: 'Failed', reason: 'NonZeroExit', message: 'exit 3', exitCode: 3 });
    expect(await grantUpload({ grantToken: third.token })).toMatchObject({
      code: 'StaleAttempt',
      message: expect.stringContaining('is Failed, not Running') as string,
    });

    const gone = await runningTask('withdrawn');
    const fourth = grants.register(gone, ARTIFACTS);
    grants.unregister(fourth.token);
    expect(await grantUpload({ grantToken: fourth.token })).toMatchObject({ code: 'StaleAttempt' });
    for (const { token } of [first, second, third]) grants.unregister(token);
    expect(grants.size).toBe(0);
  });
});

test('ArtifactGrants serves on a unix socket too, and refuses a non-loopback address', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'grants-'));
  const socket = await startArtifactGrantsServer(grants, `unix:${join(dir, 'grants.sock')}`, logger);
  const unixChannel = createChannel(`unix://${join(dir, 'grants.sock')}`);
  try {
    expect(socket.address).toBe(`unix:${join(dir, 'grants.sock')}`);
    const unixClient = createClient(artifactGrantsV1.ArtifactGrantsDefinition, unixChannel);
    await expect(
      unixClient.grantUpload({ grantToken: 'nope', artifactId: 'report.csv', size: 1, sha256: SHA, mediaType: '' }),
    ).rejects.toMatchObject({ details: 'no running execution holds this grant token' });
  } finally {
    unixChannel.close();
    await socket.stop();
    await rm(dir, { recursive: true, force: true });
  }
  await expect(startArtifactGrantsServer(grants, '0.0.0.0:0', logger)).rejects.toThrow('only loopback addresses and unix sockets');
});
