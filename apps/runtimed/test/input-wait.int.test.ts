// Waiting for input through a real runtimed process: the real control plane, a real
// S3-compatible store (SeaweedFS), and as the Pod's Runtime Server a recording one
// (recording-runtime-server.ts) that plays the Runtime Server's side of the protocol:
// the Run waits (WaitingInput, no assignment, no outcome written, released from the Pod
// Lease), and its continuation is given the verified checkpoint and the response.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  ARTIFACT_STORE_PLURAL,
  CHECKPOINT_ARTIFACT_ID,
  LEASE_ANNOTATIONS,
  RUN_PLURAL,
  artifactObjectKey,
} from '@kruntimes/api';
import type { ArtifactStore, Run, RunSpec } from '@kruntimes/api';
import { ArtifactObjects } from '@kruntimes/artifacts-core';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { ObjectStore, waitFor } from '@kruntimes/testing';
import { RuntimeEnvironment, WAIT } from './runtime-pods.ts';

const BUCKET = 'artifacts';
const PREFIX = 'wait';
const STORE = 'results';
const SCHEMA = JSON.stringify({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });
const CHECKPOINT = '{"step":7,"note":"half done"}';

let env: RuntimeEnvironment;
let store: ObjectStore;
let pod: V1Pod;
let records: string;
let objects: ArtifactObjects;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  env = await RuntimeEnvironment.start('runtimed-input-wait');
  records = await mkdtemp(join(tmpdir(), 'runtimed-input-wait-'));
  await env.core.createNamespacedSecret({
    namespace: env.name,
    body: { metadata: { name: 'results-s3' }, stringData: { ...store.credentials } },
  });
  const artifactStore: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: STORE },
    spec: { endpoint: store.endpoint, bucket: BUCKET, prefix: PREFIX, credentialsSecretRef: { name: 'results-s3' } },
  };
  await env.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: artifactStore,
  });
  objects = new ArtifactObjects(
    { endpoint: store.endpoint, bucket: BUCKET, prefix: PREFIX, region: 'us-east-1', forcePathStyle: true },
    store.credentials,
  );
  pod = await env.createRuntimePod(
    'waiter-0',
    'python',
    'rt',
    // Renewed often: the test waits for the Lease to report the released attempt.
    { KRT_RUNTIME_CAPABILITIES: 'checkpoint-v1', KRT_LEASE_RENEW_SECONDS: '2' },
    'kruntimes/runtime-server-recording:dev',
  );
}, 300_000);

afterAll(async () => {
  objects.destroy();
  await env.stop();
  await store.stop();
  await rm(records, { recursive: true, force: true });
});

function waitingSpec(mode: string, extra: Partial<RunSpec> = {}): RunSpec {
  return {
    runtime: 'rt',
    source: { inline: 'print("the recording Runtime Server runs no code")' },
    mode: { task: {} },
    // Optional: the continuation exits 0 with an empty manifest and succeeds.
    artifacts: { store: STORE, outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv', optional: true }] },
    env: [
      { name: 'STUB_MODE', value: mode },
      { name: 'STUB_RECORD_DIR', value: records },
      { name: 'STUB_CHECKPOINT', value: CHECKPOINT },
      { name: 'STUB_SCHEMA', value: SCHEMA },
    ],
    ...extra,
  };
}

/** What the recording Runtime Server wrote for one attempt (it writes after runtimed answered: waited for, bounded). */
async function recorded(run: Run, attempt: number): Promise<Record<string, unknown>> {
  const file = join(records, `${run.metadata.uid ?? ''}-${String(attempt)}.json`);
  return waitFor(
    `the record of attempt ${String(attempt)}`,
    async () => {
      try {
        return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    WAIT,
  );
}

/** Another writer's event (the controller-manager answering, or a test playing a former owner), written through the state machine. */
async function write(name: string, event: RunEvent, writer: WriterRole): Promise<Run> {
  const run = await env.getRun(name);
  const result = transition({ run, event, writer, now: new Date().toISOString() });
  if (!result.ok) throw result.error;
  return (await env.objects.replaceNamespacedCustomObjectStatus({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUN_PLURAL,
    name,
    body: { ...run, status: result.status },
  })) as Run;
}

async function heldAndReleased(): Promise<{ held: { uid: string; attempt: number }[]; released: { uid: string; attempt: number }[] }> {
  const lease = await env.admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: env.name, name: 'waiter-0' });
  const annotations = lease.metadata?.annotations ?? {};
  const parse = (value: string | undefined) => JSON.parse(value ?? '[]') as { uid: string; attempt: number }[];
  return { held: parse(annotations[LEASE_ANNOTATIONS.heldRuns]), released: parse(annotations[LEASE_ANNOTATIONS.releasedRuns]) };
}

const terminal = (run: Run) => ['Succeeded', 'Failed', 'Interrupted', 'Cancelled', 'Timeout'].includes(run.status?.phase ?? '');

test('a task waits: WaitingInput with no assignment and nothing else written, released from the Pod Lease; the continuation gets the verified checkpoint and the response', async () => {
  await env.createRun('approve', waitingSpec('wait'));
  await env.bind('approve', pod);
  const waiting = await env.waitForRun('approve', 'WaitingInput', (run) => run.status?.phase === 'WaitingInput' || terminal(run));
  expect(waiting.status).toMatchObject({
    phase: 'WaitingInput',
    attempt: 1,
    waitingInput: { schema: SCHEMA, checkpoint: { attempt: 1, size: CHECKPOINT.length } },
  });
  expect(waiting.status).not.toHaveProperty('assignedPodUID');
  const uid = waiting.metadata.uid ?? '';
  // The Runtime Server heard the answer: the attempt that waits.
  expect(await recorded(waiting, 1)).toEqual({ attempt: 1, awaited: 1 });
  expect(await objects.stat(artifactObjectKey(PREFIX, env.name, uid, 1, CHECKPOINT_ARTIFACT_ID))).toMatchObject({
    size: CHECKPOINT.length,
  });
  // The execution's end (EXIT_REASON_WAITING_INPUT) wrote nothing and released the attempt.
  await waitFor(
    'the attempt released in the Pod Lease',
    async () => {
      const lease = await heldAndReleased();
      return lease.released.some((ref) => ref.uid === uid && ref.attempt === 1) && !lease.held.some((ref) => ref.uid === uid)
        ? true
        : undefined;
    },
    { timeoutMs: WAIT.timeoutMs, intervalMs: 250 },
  );
  const logs = (await env.logs('waiter-0', 'runtimed')).filter((line) => line.runUID === uid);
  expect(logs.map((line) => line.msg)).toEqual(
    expect.arrayContaining(['waiting for input: WaitingInput recorded', 'the execution that waits for input ended; the attempt is over']),
  );
  expect(JSON.stringify(logs)).not.toMatch(/X-Amz-Signature|grantToken/);
  expect((await env.getRun('approve')).status).toMatchObject({ phase: 'WaitingInput', reportSequence: waiting.status?.reportSequence });

  // The controller-manager accepts a response; the scheduler binds the continuation.
  await write(
    'approve',
    { type: 'InputReceived', responseId: 'r-1', runInput: 'approve-input', input: '{"approved":true}' },
    'controller-manager',
  );
  await env.bind('approve', pod);
  const done = await env.waitForRun('approve', 'terminal', terminal);
  expect(done.status).toMatchObject({ phase: 'Succeeded', attempt: 2 });
  expect(await recorded(done, 2)).toEqual({
    attempt: 2,
    resume: { checkpoint: CHECKPOINT, checkpointAttempt: 1, inputJson: '{"approved":true}', responseId: 'r-1' },
  });
});

test('an exit with EXIT_REASON_WAITING_INPUT that runtimed never recorded is an unexpected end (interrupted)', async () => {
  await env.createRun('unrecorded', waitingSpec('wait-unrecorded'));
  await env.bind('unrecorded', pod);
  const done = await env.waitForRun('unrecorded', 'terminal', terminal);
  expect(done.status).toMatchObject({ phase: 'Interrupted' });
  expect(done.status?.message).toContain('ended unexpectedly');
  expect(done.status).not.toHaveProperty('waitingInput');
});

test('a Runtime Server asking a Runtime without checkpoint-v1 hears CheckpointUnsupported; the Run just fails with its exit code', async () => {
  const plain = await env.createRuntimePod('plain-0', 'python', 'plain', {}, 'kruntimes/runtime-server-recording:dev');
  await env.createRun('no-capability', { ...waitingSpec('wait'), runtime: 'plain' });
  await env.bind('no-capability', plain);
  const done = await env.waitForRun('no-capability', 'terminal', terminal);
  expect(done.status).toMatchObject({ phase: 'Failed', exitCode: 3 });
  expect(await recorded(done, 1)).toEqual({
    attempt: 1,
    error: 'waiting for input is not available: Runtime plain does not declare checkpoint-v1 in spec.capabilities',
  });
});

test('Python end to end with the real Runtime Server: krt.wait_for_input waits, krt.resumed() continues with the checkpoint and the response', async () => {
  const python = await env.createRuntimePod('python-0', 'python', 'py', { KRT_RUNTIME_CAPABILITIES: 'checkpoint-v1' });
  const source = `import json, os, krt
state = krt.resumed()
if state is None:
    print("preparing")
    krt.wait_for_input(${JSON.stringify(JSON.parse(SCHEMA))}, {"draft": "v1", "rows": [1, 2]})
    raise SystemExit("wait_for_input returned")
with open(os.path.join(os.environ["RECORDS"], os.environ["KRT_RUN_UID"] + "-python.json"), "w") as f:
    json.dump({"checkpoint": state.checkpoint, "input": state.input, "responseId": state.response_id, "from": state.resumed_from_attempt, "attempt": os.environ["KRT_ATTEMPT"]}, f)
`;
  await env.createRun('py-approve', {
    runtime: 'py',
    source: { inline: source },
    mode: { task: {} },
    artifacts: { store: STORE, outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv', optional: true }] },
    env: [{ name: 'RECORDS', value: records }],
  });
  await env.bind('py-approve', python);
  const waiting = await env.waitForRun('py-approve', 'WaitingInput', (run) => run.status?.phase === 'WaitingInput' || terminal(run));
  expect(waiting.status).toMatchObject({ phase: 'WaitingInput', waitingInput: { checkpoint: { attempt: 1 } } });
  expect(JSON.parse(waiting.status?.waitingInput?.schema ?? 'null')).toEqual(JSON.parse(SCHEMA));
  await write(
    'py-approve',
    { type: 'InputReceived', responseId: 'ok-1', runInput: 'py-approve-input', input: '{"approved":true}' },
    'controller-manager',
  );
  await env.bind('py-approve', python);
  const done = await env.waitForRun('py-approve', 'terminal', terminal);
  expect(done.status).toMatchObject({ phase: 'Succeeded', attempt: 2 });
  const seen = JSON.parse(await readFile(join(records, `${done.metadata.uid ?? ''}-python.json`), 'utf8')) as unknown;
  expect(seen).toEqual({ checkpoint: { draft: 'v1', rows: [1, 2] }, input: { approved: true }, responseId: 'ok-1', from: 1, attempt: '2' });
  const logs = (await env.logs('python-0', 'runtimed')).filter((line) => line.runUID === done.metadata.uid);
  expect(logs.filter((line) => line.msg === 'task output').map((line) => line.line)).toEqual(['preparing']);
});

test('Bash end to end with the real Runtime Server: krt-input wait, then the continuation reads $KRT_CHECKPOINT_FILE and $KRT_INPUT_FILE', async () => {
  const bash = await env.createRuntimePod('bash-0', 'bash', 'sh', { KRT_RUNTIME_CAPABILITIES: 'checkpoint-v1' });
  const source = `if [ -z "\${KRT_INPUT_FILE:-}" ]; then
  echo '{"n":1}' > state.json
  krt-input wait --schema '{"type":"object","required":["ok"]}' --checkpoint state.json
  exit 9
fi
{ printf '{"checkpoint":'; cat "$KRT_CHECKPOINT_FILE"; printf ',"input":'; cat "$KRT_INPUT_FILE"; printf ',"responseId":"%s","from":"%s"}' "$KRT_RESPONSE_ID" "$KRT_RESUMED_FROM_ATTEMPT"; } > "$RECORDS/$KRT_RUN_UID-bash.json"
`;
  await env.createRun('sh-approve', {
    runtime: 'sh',
    source: { inline: source },
    mode: { task: {} },
    artifacts: { store: STORE, outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv', optional: true }] },
    env: [{ name: 'RECORDS', value: records }],
  });
  await env.bind('sh-approve', bash);
  await env.waitForRun('sh-approve', 'WaitingInput', (run) => run.status?.phase === 'WaitingInput' || terminal(run));
  expect((await env.getRun('sh-approve')).status).toMatchObject({ phase: 'WaitingInput' });
  await write(
    'sh-approve',
    { type: 'InputReceived', responseId: 'yes', runInput: 'sh-approve-input', input: '{"ok":1}' },
    'controller-manager',
  );
  await env.bind('sh-approve', bash);
  const done = await env.waitForRun('sh-approve', 'terminal', terminal);
  expect(done.status).toMatchObject({ phase: 'Succeeded', attempt: 2 });
  const seen = JSON.parse(await readFile(join(records, `${done.metadata.uid ?? ''}-bash.json`), 'utf8')) as unknown;
  expect(seen).toEqual({ checkpoint: { n: 1 }, input: { ok: 1 }, responseId: 'yes', from: '1' });
});

describe('a continuation whose checkpoint cannot be used fails, not retried', () => {
  /** The Run a first attempt left waiting (a former Pod), then answered: Pending at attempt 2, resuming from attempt 1. */
  async function answered(name: string, stored: string | undefined): Promise<Run> {
    const created = await env.createRun(name, waitingSpec('record', { retryPolicy: { retrySafe: true, maxAttempts: 3 } }));
    const uid = created.metadata.uid ?? '';
    await write(name, { type: 'Bind', pod: 'gone-0', podUID: '00000000-0000-4000-8000-00000000dead' }, 'scheduler');
    await write(name, { type: 'Claim' }, 'runtimed');
    const digest = `sha256:${createHash('sha256').update(CHECKPOINT).digest('hex')}`;
    await write(name, { type: 'WaitForInput', schema: SCHEMA, checkpoint: { digest, size: CHECKPOINT.length } }, 'runtimed');
    if (stored !== undefined) await store.putObject(BUCKET, artifactObjectKey(PREFIX, env.name, uid, 1, CHECKPOINT_ARTIFACT_ID), stored);
    return write(
      name,
      { type: 'InputReceived', responseId: 'r-9', runInput: `${name}-input`, input: '{"approved":false}' },
      'controller-manager',
    );
  }

  test.each([
    ['missing from the store', 'ArtifactMissing', undefined, 'the checkpoint of attempt 1 is not in the store'],
    ['other bytes of the same size', 'ArtifactInvalid', CHECKPOINT.replace('7', '8'), 'is not the one recorded'],
    ['larger than recorded', 'ArtifactInvalid', `${CHECKPOINT}!`, 'is not the one recorded'],
  ])('checkpoint %s: Failed %s', async (_case, reason, stored, message) => {
    const name = `resume-${reason.toLowerCase()}-${String(stored?.length ?? 0)}`;
    await answered(name, stored);
    await env.bind(name, pod);
    const done = await env.waitForRun(name, 'terminal', terminal);
    expect(done.status).toMatchObject({ phase: 'Failed', reason, attempt: 2 });
    expect(done.status?.message).toContain(message);
    // Failed at once, although the task is retrySafe with attempts left (the same object would
    // fail again), and nothing was executed.
    await expect(readFile(join(records, `${done.metadata.uid ?? ''}-2.json`))).rejects.toThrow('ENOENT');
  });
});
