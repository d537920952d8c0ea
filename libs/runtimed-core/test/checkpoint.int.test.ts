// Waiting for input at runtimed's ArtifactGrants over real gRPC on loopback, against the
// real API server and a real object store (SeaweedFS), with runtimed's own RBAC:
// GrantCheckpoint presigns exactly the attempt's krt.checkpoint key; AwaitInput refuses
// what cannot wait (no capability, a function Run, no spec.artifacts, too large, a schema
// that does not compile, a checkpoint missing or other than said, a stale or cancelled
// attempt), and otherwise answers only once the Run is WaitingInput with no assignment.
import { createHash } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  API_GROUP,
  API_GROUP_VERSION,
  API_VERSION,
  ARTIFACT_STORE_PLURAL,
  BOUNDS,
  CHECKPOINT_ARTIFACT_ID,
  RUN_PLURAL,
  artifactObjectKey,
} from '@kruntimes/api';
import type { Run, RunArtifacts, RunSpec, RuntimeCapability } from '@kruntimes/api';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import type { RunEvent } from '@kruntimes/run-state';
import { transition } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, ObjectStore, kubeConfigFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { pino } from 'pino';
import { ArtifactGrants, startArtifactGrantsServer } from '../src/artifact-grants.ts';
import type { RunningArtifactGrants } from '../src/artifact-grants.ts';
import { kubernetesStoreResolver } from '../src/artifact-store-access.ts';
import type { Epoch } from '../src/epoch.ts';
import { RUNTIMED_ROLE_RULES } from '../src/rbac.ts';
import { CheckpointReader } from '../src/resume.ts';
import { RunClient } from '../src/run-client.ts';
import type { Execution, ReconcileContext } from '../src/run-work.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const POD_UID = '00000000-0000-4000-8000-0000000000c7';
const BUCKET = 'kruntimes';
const PREFIX = 'cp';
const logger = pino({ level: 'silent' });
const ARTIFACTS: RunArtifacts = { store: 'results', outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }] };
const SCHEMA = JSON.stringify({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });
const CHECKPOINT = '{"step":3,"rows":[1,2,3]}';

interface Served {
  grants: ArtifactGrants;
  server: RunningArtifactGrants;
  channel: Channel;
  client: Client<artifactGrantsV1.ArtifactGrantsDefinition>;
}

let namespace: TestNamespace;
let store: ObjectStore;
let runs: RunClient;
/** Runs just before AwaitInput's status write (a real write of another party, to interleave deterministically). */
let beforeWrite: (() => Promise<void>) | undefined;
let capable: Served;
let plain: Served;

const target = () => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural: RUN_PLURAL });

async function serve(capabilities: RuntimeCapability[]): Promise<Served> {
  const grants = new ArtifactGrants({
    runs: {
      verify: (epoch, phases) => runs.verify(epoch, phases),
      transition: async (epoch: Epoch, event: RunEvent) => {
        await beforeWrite?.();
        return runs.transition(epoch, event);
      },
    },
    stores: kubernetesStoreResolver(runtimedKubeConfig),
    leaseExpiresAtMs: () => Date.now() + 90_000,
    runtime: 'python',
    capabilities,
    logger,
  });
  const server = await startArtifactGrantsServer(grants, '127.0.0.1:0', logger);
  const channel = createChannel(server.address);
  return { grants, server, channel, client: createClient(artifactGrantsV1.ArtifactGrantsDefinition, channel) };
}

let runtimedKubeConfig: ReturnType<typeof kubeConfigFor>;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  namespace = await cluster.createNamespace({ prefix: 'checkpoint' });
  await core.createNamespacedSecret({
    namespace: namespace.name,
    body: { metadata: { name: 'store-keys' }, stringData: { ...store.credentials } },
  });
  await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: {
      apiVersion: API_GROUP_VERSION,
      kind: 'ArtifactStore',
      metadata: { name: 'results' },
      spec: { endpoint: store.endpoint, bucket: BUCKET, prefix: PREFIX, credentialsSecretRef: { name: 'store-keys' } },
    },
  });
  // Nothing listens on port 9 of loopback: a store that cannot be reached.
  await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: {
      apiVersion: API_GROUP_VERSION,
      kind: 'ArtifactStore',
      metadata: { name: 'unreachable' },
      spec: { endpoint: 'http://127.0.0.1:9', bucket: BUCKET, credentialsSecretRef: { name: 'store-keys' } },
    },
  });
  // runtimed's own identity: RUNTIMED_ROLE_RULES are all these calls need.
  const token = await new NamespaceAccess(cluster, namespace.name).serviceAccountToken('runtimed', RUNTIMED_ROLE_RULES);
  runtimedKubeConfig = kubeConfigFor({ server: cluster.info.server, caPem: cluster.info.caPem, user: 'runtimed', token });
  runs = new RunClient(runtimedKubeConfig);
  capable = await serve(['checkpoint-v1']);
  plain = await serve([]);
}, 120_000);

afterAll(async () => {
  for (const served of [capable, plain]) {
    served.channel.close();
    await served.server.stop();
  }
  await namespace.delete();
  await store.stop();
});

beforeEach(() => {
  beforeWrite = undefined;
});

/** A Run bound to POD_UID and claimed: its attempt 1 runs on "this" Pod. */
async function claimedRun(name: string, spec: Partial<RunSpec> = {}, withArtifacts = true): Promise<Epoch> {
  const created = (await objects.createNamespacedCustomObject({
    ...target(),
    body: {
      apiVersion: API_GROUP_VERSION,
      kind: 'Run',
      metadata: { name },
      spec: {
        runtime: 'python',
        source: { inline: 'print(1)' },
        mode: { task: {} },
        ...(withArtifacts ? { artifacts: ARTIFACTS } : {}),
        ...spec,
      },
    },
  })) as Run;
  const bound = transition({
    run: created,
    event: { type: 'Bind', pod: 'pod-a', podUID: POD_UID },
    writer: 'scheduler',
    now: new Date().toISOString(),
  });
  if (!bound.ok) throw bound.error;
  await objects.replaceNamespacedCustomObjectStatus({ ...target(), name, body: { ...created, status: bound.status } });
  const epoch: Epoch = { namespace: namespace.name, name, uid: created.metadata.uid ?? '', attempt: 1, podUID: POD_UID };
  await runs.transition(epoch, { type: 'Claim' });
  return epoch;
}

function execution(epoch: Epoch): Execution {
  return { id: `${epoch.uid}/${String(epoch.attempt)}`, abort: new AbortController(), done: Promise.resolve() };
}

async function getRun(name: string): Promise<Run> {
  return (await objects.getNamespacedCustomObject({ ...target(), name })) as Run;
}

const sha256 = (body: string) => createHash('sha256').update(body).digest('hex');
const checkpointKey = (epoch: Epoch, attempt = epoch.attempt) =>
  artifactObjectKey(PREFIX, epoch.namespace, epoch.uid, attempt, CHECKPOINT_ARTIFACT_ID);

interface Refusal {
  code: string | undefined;
  message: string;
}

/** One RPC as the Runtime Server makes it; a refusal comes back as its kruntimes code and message. */
async function call<T>(rpc: (options: { onTrailer(t: Metadata): void }) => Promise<T>): Promise<T | Refusal> {
  let trailer = Metadata();
  try {
    return await rpc({
      onTrailer: (t) => {
        trailer = t;
      },
    });
  } catch (error) {
    if (!(error instanceof ClientError)) throw error;
    return { code: trailer.get(METADATA_KEYS.errorCode), message: error.details };
  }
}

function grantCheckpoint(served: Served, grantToken: string, body = CHECKPOINT, size = Buffer.byteLength(body)) {
  return call((options) => served.client.grantCheckpoint({ grantToken, size, sha256: sha256(body) }, options));
}

function awaitInput(served: Served, grantToken: string, body = CHECKPOINT, schemaJson = SCHEMA, size = Buffer.byteLength(body)) {
  return call((options) =>
    served.client.awaitInput({ grantToken, checkpointSize: size, checkpointSha256: sha256(body), schemaJson }, options),
  );
}

/** GrantCheckpoint, then the PUT exactly as the grant says. */
async function uploadCheckpoint(served: Served, token: string, body = CHECKPOINT): Promise<void> {
  const grant = await grantCheckpoint(served, token, body);
  if (!('url' in grant)) throw new Error(`no checkpoint grant: ${grant.code ?? ''} ${grant.message}`);
  const put = await fetch(grant.url, { method: grant.method, headers: grant.headers, body });
  expect(put.status).toBe(200);
}

describe('what cannot wait is refused with what is missing', () => {
  test('a Runtime without checkpoint-v1: CheckpointUnsupported, for the grant and for AwaitInput', async () => {
    const epoch = await claimedRun('no-capability');
    const { token } = plain.grants.register(epoch, ARTIFACTS, execution(epoch));
    const expected = {
      code: 'CheckpointUnsupported',
      message: 'waiting for input is not available: Runtime python does not declare checkpoint-v1 in spec.capabilities',
    };
    expect(await grantCheckpoint(plain, token)).toEqual(expected);
    expect(await awaitInput(plain, token)).toEqual(expected);
    plain.grants.unregister(token);
  });

  test('a function Run, and a task without spec.artifacts: CheckpointUnsupported naming each', async () => {
    const fn = await claimedRun('a-function', { mode: { function: { handler: 'main:handler' } } }, false);
    const fnToken = capable.grants.register(fn, ARTIFACTS, execution(fn)).token;
    expect(await grantCheckpoint(capable, fnToken)).toEqual({
      code: 'CheckpointUnsupported',
      message:
        'waiting for input is not available: the Run is a function Run, not a task; the Run declares no spec.artifacts (its ArtifactStore keeps the checkpoint)',
    });
    const bare = await claimedRun('no-artifacts', {}, false);
    const bareToken = capable.grants.register(bare, ARTIFACTS, execution(bare)).token;
    expect(await awaitInput(capable, bareToken)).toMatchObject({
      code: 'CheckpointUnsupported',
      message: expect.stringContaining('declares no spec.artifacts') as string,
    });
    capable.grants.unregister(fnToken);
    capable.grants.unregister(bareToken);
  });

  test('over 1 MiB: CheckpointTooLarge; a schema that does not compile: InputSchemaInvalid with the problem', async () => {
    const epoch = await claimedRun('bounds');
    const { token } = capable.grants.register(epoch, ARTIFACTS, execution(epoch));
    expect(await grantCheckpoint(capable, token, CHECKPOINT, BOUNDS.checkpointBytes + 1)).toEqual({
      code: 'CheckpointTooLarge',
      message: `the checkpoint is ${String(BOUNDS.checkpointBytes + 1)} bytes, over ${String(BOUNDS.checkpointBytes)}`,
    });
    expect(await awaitInput(capable, token, CHECKPOINT, SCHEMA, BOUNDS.checkpointBytes + 1)).toMatchObject({ code: 'CheckpointTooLarge' });
    expect(await awaitInput(capable, token, CHECKPOINT, '{"type":"banana"}')).toMatchObject({
      code: 'InputSchemaInvalid',
      message: expect.stringContaining('not a valid JSON Schema') as string,
    });
    expect(await awaitInput(capable, token, CHECKPOINT, '{"type":')).toMatchObject({ code: 'InputSchemaInvalid' });
    expect((await getRun('bounds')).status?.phase).toBe('Running');
    capable.grants.unregister(token);
  });

  test('a checkpoint missing from the store, or other bytes than said: CheckpointNotStored, and the Run keeps running', async () => {
    const epoch = await claimedRun('not-stored');
    const { token } = capable.grants.register(epoch, ARTIFACTS, execution(epoch));
    expect(await awaitInput(capable, token)).toEqual({
      code: 'CheckpointNotStored',
      message: 'the checkpoint of attempt 1 is not as granted: krt.checkpoint is in the AwaitInput request but not in the store',
    });
    await uploadCheckpoint(capable, token);
    // Same size, other digest.
    const other = CHECKPOINT.replace('3', '4');
    expect(await awaitInput(capable, token, other)).toMatchObject({
      code: 'CheckpointNotStored',
      message: expect.stringContaining(`says sha256 ${sha256(other)}`) as string,
    });
    expect(await awaitInput(capable, token, `${CHECKPOINT} `)).toMatchObject({
      code: 'CheckpointNotStored',
      message: expect.stringContaining('the store holds') as string,
    });
    expect((await getRun('not-stored')).status).toMatchObject({ phase: 'Running', assignedPodUID: POD_UID });
    capable.grants.unregister(token);
  });
});

test('GrantCheckpoint presigns exactly the attempt’s krt.checkpoint key, as application/octet-stream', async () => {
  const epoch = await claimedRun('granted');
  const { token } = capable.grants.register(epoch, ARTIFACTS, execution(epoch));
  const grant = await grantCheckpoint(capable, token);
  if (!('url' in grant)) throw new Error(grant.message);
  expect(new URL(grant.url).pathname).toBe(`/${BUCKET}/${checkpointKey(epoch)}`);
  expect(grant.headers).toMatchObject({ 'content-type': 'application/octet-stream', 'content-length': String(CHECKPOINT.length) });
  expect(grant.expiresAt!.getTime()).toBeLessThanOrEqual(Date.now() + 90_000);
  const put = await fetch(grant.url, { method: grant.method, headers: grant.headers, body: CHECKPOINT });
  expect(put.status).toBe(200);
  expect(await store.listKeys(BUCKET, `${PREFIX}/${namespace.name}/${epoch.uid}/`)).toEqual([checkpointKey(epoch)]);
  capable.grants.unregister(token);
});

test('AwaitInput answers once the Run is WaitingInput with status.waitingInput and no assignment; the attempt can then do neither again', async () => {
  const epoch = await claimedRun('waits');
  const running = execution(epoch);
  const { token } = capable.grants.register(epoch, ARTIFACTS, running);
  await uploadCheckpoint(capable, token);
  beforeWrite = () => {
    // During the write the execution is already marked: an end of it meanwhile waits for the write.
    expect(running.stoppedFor).toBe('waitingInput');
    expect(running.waitWrite).toBeDefined();
    return Promise.resolve();
  };
  expect(await awaitInput(capable, token)).toEqual({ attempt: 1 });
  // Read right after the answer: the write is stored by then.
  const run = await getRun('waits');
  expect(run.status).toMatchObject({
    phase: 'WaitingInput',
    attempt: 1,
    reason: 'WaitingInput',
    waitingInput: { schema: SCHEMA, checkpoint: { attempt: 1, digest: `sha256:${sha256(CHECKPOINT)}`, size: CHECKPOINT.length } },
  });
  expect(run.status?.waitingInput?.since).toEqual(expect.any(String));
  expect(run.status).not.toHaveProperty('assignedPod');
  expect(run.status).not.toHaveProperty('assignedPodUID');
  expect(running.stoppedFor).toBe('waitingInput');
  expect(running.waitWrite).toBeUndefined();
  // The token still exists until the execution ends, but the attempt no longer runs here.
  beforeWrite = undefined;
  expect(await grantCheckpoint(capable, token)).toMatchObject({
    code: 'StaleAttempt',
    message: expect.stringContaining('assigned to Pod (none)') as string,
  });
  expect(await awaitInput(capable, token)).toMatchObject({ code: 'StaleAttempt' });
  capable.grants.unregister(token);
  expect(await awaitInput(capable, token)).toEqual({ code: 'StaleAttempt', message: 'no running execution holds this grant token' });
});

describe('a stale attempt can do neither', () => {
  test('requeued to attempt 2: the old token is StaleAttempt for both calls', async () => {
    const epoch = await claimedRun('requeued', { retryPolicy: { retrySafe: true, maxAttempts: 2 } });
    const { token } = capable.grants.register(epoch, ARTIFACTS, execution(epoch));
    await uploadCheckpoint(capable, token);
    await runs.transition(epoch, { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 0, message: 'attempt 1: exited 1' });
    for (const answer of [await grantCheckpoint(capable, token), await awaitInput(capable, token)]) {
      expect(answer).toMatchObject({ code: 'StaleAttempt', message: expect.stringContaining('no longer current') as string });
    }
    expect((await getRun('requeued')).status).toMatchObject({ phase: 'Pending', attempt: 2 });
    capable.grants.unregister(token);
  });

  test('cancel requested before: StaleAttempt; stored during the write: the write is refused, answered, and the mark taken back', async () => {
    const before = await claimedRun('cancel-before');
    const first = capable.grants.register(before, ARTIFACTS, execution(before));
    await uploadCheckpoint(capable, first.token);
    await objects.patchNamespacedCustomObject({
      ...target(),
      name: 'cancel-before',
      body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
    });
    expect(await awaitInput(capable, first.token)).toEqual({
      code: 'StaleAttempt',
      message: 'the attempt is no longer current: its cancel was requested',
    });
    expect(await grantCheckpoint(capable, first.token)).toMatchObject({ code: 'StaleAttempt' });

    const during = await claimedRun('cancel-during');
    const running = execution(during);
    const second = capable.grants.register(during, ARTIFACTS, running);
    await uploadCheckpoint(capable, second.token);
    beforeWrite = async () => {
      await objects.patchNamespacedCustomObject({
        ...target(),
        name: 'cancel-during',
        body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
      });
    };
    expect(await awaitInput(capable, second.token)).toMatchObject({
      code: 'InvalidTransition',
      message: expect.stringContaining('cancel was requested') as string,
    });
    expect(running.stoppedFor).toBeUndefined();
    expect(running.waitWrite).toBeUndefined();
    expect((await getRun('cancel-during')).status).toMatchObject({ phase: 'Running', assignedPodUID: POD_UID });
    for (const { token } of [first, second]) capable.grants.unregister(token);
  });

  test('an execution stopped meanwhile (cancel in runtimed) keeps that mark when the write is refused', async () => {
    const epoch = await claimedRun('stopped-during');
    const running = execution(epoch);
    const { token } = capable.grants.register(epoch, ARTIFACTS, running);
    await uploadCheckpoint(capable, token);
    beforeWrite = async () => {
      running.stoppedFor = 'cancel';
      await objects.patchNamespacedCustomObject({
        ...target(),
        name: 'stopped-during',
        body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
      });
    };
    expect(await awaitInput(capable, token)).toMatchObject({ code: 'InvalidTransition' });
    expect(running.stoppedFor).toBe('cancel');
    capable.grants.unregister(token);
  });

  test('an execution already being stopped is refused before any write', async () => {
    const epoch = await claimedRun('being-stopped');
    const running = { ...execution(epoch), stoppedFor: 'expire' as const };
    const { token } = capable.grants.register(epoch, ARTIFACTS, running);
    await uploadCheckpoint(capable, token);
    expect(await awaitInput(capable, token)).toEqual({ code: 'StaleAttempt', message: 'the execution is being stopped (expire)' });
    expect((await getRun('being-stopped')).status?.phase).toBe('Running');
    capable.grants.unregister(token);
  });
});

test('a store that cannot be reached: AwaitInput answers ArtifactStoreUnavailable and records nothing', async () => {
  const epoch = await claimedRun('store-down', { artifacts: { ...ARTIFACTS, store: 'unreachable' } });
  const running = execution(epoch);
  const { token } = capable.grants.register(epoch, ARTIFACTS, running);
  expect(await awaitInput(capable, token)).toMatchObject({ code: 'ArtifactStoreUnavailable' });
  expect(running.stoppedFor).toBeUndefined();
  expect((await getRun('store-down')).status).toMatchObject({ phase: 'Running', assignedPodUID: POD_UID });
  capable.grants.unregister(token);
});

describe('the continuation reads its checkpoint with runtimed’s credentials', () => {
  const reader = () => new CheckpointReader({ stores: kubernetesStoreResolver(runtimedKubeConfig), retryDelaysMs: [10, 10] });

  /** A Run answered after attempt 1 stored CHECKPOINT: what runtimed sees when it executes attempt 2. */
  async function continuation(name: string, storeName: string): Promise<ReconcileContext> {
    const first = await claimedRun(name, { artifacts: { ...ARTIFACTS, store: storeName } });
    await store.putObject(BUCKET, checkpointKey(first), CHECKPOINT);
    await runs.transition(first, {
      type: 'WaitForInput',
      schema: SCHEMA,
      checkpoint: { digest: `sha256:${sha256(CHECKPOINT)}`, size: CHECKPOINT.length },
    });
    const waiting = await getRun(name);
    const answered = transition({
      run: waiting,
      event: { type: 'InputReceived', responseId: 'r-1', runInput: `${name}-input`, input: '{"approved":true}' },
      writer: 'controller-manager',
      now: new Date().toISOString(),
    });
    if (!answered.ok) throw answered.error;
    const run = (await objects.replaceNamespacedCustomObjectStatus({
      ...target(),
      name,
      body: { ...waiting, status: answered.status },
    })) as Run;
    return { key: `${namespace.name}/${name}`, run, epoch: { ...first, attempt: 2 }, log: logger };
  }

  test('the recorded bytes: ready with the checkpoint of attempt 1 and the response', async () => {
    const loaded = await reader().load(await continuation('resumes', 'results'), new AbortController().signal);
    expect(loaded).toEqual({
      type: 'ready',
      resume: { checkpoint: Buffer.from(CHECKPOINT), checkpointAttempt: 1, inputJson: '{"approved":true}', responseId: 'r-1' },
    });
  });

  test('a store that cannot be reached is read again, then the attempt is interrupted', async () => {
    const loaded = await reader().load(await continuation('resume-store-down', 'unreachable'), new AbortController().signal);
    expect(loaded).toMatchObject({ type: 'interrupted', message: expect.stringContaining('after 3 tries') as string });
  });
});
