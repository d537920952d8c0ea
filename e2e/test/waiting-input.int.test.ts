// Waiting for input end to end (issue 18): the real control plane, scheduler,
// controller-manager (the RunInput controller), runtimed and runtime-server-python
// processes on the local node, and a real S3-compatible store (SeaweedFS) holding the
// checkpoint. The Runtime has room for one Run per Pod, so a Run that binds while another
// waits shows that waiting holds no capacity.
import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL, RUN_INPUT_PLURAL, RUN_PLURAL } from '@kruntimes/api';
import type { ArtifactStore, Run, RunInput, RunSpec } from '@kruntimes/api';
import { runInputName } from '@kruntimes/input-core';
import { ObjectStore, kubeConfigFor, waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';

const BUCKET = 'checkpoints';
const STORE = 'results';
const RUNTIME = 'py';

const APPROVAL_SCHEMA = {
  type: 'object',
  properties: { approved: { type: 'boolean' }, note: { type: 'string' } },
  required: ['approved'],
  additionalProperties: false,
};

/** Waits once with a checkpoint, then (resumed) reports what it was given as outputs. */
const WAITING_TASK = `
import json, os, krt
resumed = krt.resumed()
if resumed is None:
    print("drafting")
    krt.wait_for_input(json.loads(${JSON.stringify(JSON.stringify(APPROVAL_SCHEMA))}), {"step": 1, "draft": "quarterly report"})
    raise SystemExit("wait_for_input returned")
outputs = {
    "approved": json.dumps(resumed.input["approved"]),
    "draft": resumed.checkpoint["draft"],
    "response": resumed.response_id,
    "attempt": os.environ["KRT_ATTEMPT"],
}
json.dump(outputs, open(os.environ["KRT_OUTPUTS_FILE"], "w"))
`;

let system: System;
let store: ObjectStore;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  system = await System.start({ prefix: 'e2e-wait', gateway: false });
  await system.core.createNamespacedSecret({
    namespace: system.name,
    body: { metadata: { name: 'results-s3' }, stringData: { ...store.credentials } },
  });
  const artifactStore: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: STORE },
    spec: { endpoint: store.endpoint, bucket: BUCKET, credentialsSecretRef: { name: 'results-s3' } },
  };
  await system.objects.createNamespacedCustomObject({ ...custom(ARTIFACT_STORE_PLURAL), body: artifactStore });
  await system.createRuntime(RUNTIME, { language: 'python', runs: 1, replicas: 1, capabilities: ['checkpoint-v1'] });
  await system.waitRuntimeReady(RUNTIME);
}, 300_000);

afterAll(async () => {
  await system.stop();
  await store.stop();
});

function custom(plural: string): { group: string; version: string; namespace: string; plural: string } {
  return { group: API_GROUP, version: API_VERSION, namespace: system.name, plural };
}

async function createTask(name: string, source: string, extra: Partial<RunSpec> = {}): Promise<void> {
  const body: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: {
      runtime: RUNTIME,
      source: { inline: source },
      mode: { task: {} },
      // The checkpoint is an artifact of its attempt: the Run names the store.
      artifacts: { store: STORE, outputs: [{ id: 'unused.txt', maxBytes: 16, mediaType: 'text/plain', optional: true }] },
      ...extra,
    },
  };
  await system.objects.createNamespacedCustomObject({ ...custom(RUN_PLURAL), body });
}

const isTerminal = (run: Run): boolean => ['Succeeded', 'Failed', 'Timeout', 'Cancelled', 'Interrupted'].includes(run.status?.phase ?? '');

async function waitWaiting(name: string): Promise<Run> {
  return system.waitForRun(name, 'WaitingInput', (run) => {
    if (isTerminal(run)) throw new Error(`Run ${name} ended ${run.status?.phase ?? ''} (${run.status?.message ?? ''}) instead of waiting`);
    return run.status?.phase === 'WaitingInput';
  });
}

async function respond(objects: CustomObjectsApi, name: string, runName: string, responseId: string, data: unknown): Promise<void> {
  const body: RunInput = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'RunInput', metadata: { name }, spec: { runName, responseId, data } };
  await objects.createNamespacedCustomObject({ ...custom(RUN_INPUT_PLURAL), body });
}

async function decided(name: string): Promise<RunInput> {
  return waitFor(
    `RunInput ${name} decided`,
    async () => {
      const input = (await system.objects.getNamespacedCustomObject({ ...custom(RUN_INPUT_PLURAL), name })) as RunInput;
      const accepted = input.status?.conditions?.find((condition) => condition.type === 'Accepted');
      return accepted === undefined || accepted.status === 'Unknown' ? undefined : input;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

function clientFor(user: string, token: string): CustomObjectsApi {
  const { server, caPem } = system.cluster.info;
  return kubeConfigFor({ server, caPem, user, token }).makeApiClient(CustomObjectsApi);
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const acceptedCondition = (input: RunInput) => input.status?.conditions?.find((condition) => condition.type === 'Accepted');

test('a Python task waits with a checkpoint, holds no capacity while waiting, refuses a bad response, is answered once, and finishes on attempt 2 from the checkpoint', async () => {
  await createTask('approval', WAITING_TASK);
  const waiting = await waitWaiting('approval');
  expect(waiting.status).toMatchObject({
    attempt: 1,
    reason: 'WaitingInput',
    waitingInput: { checkpoint: { attempt: 1, size: expect.any(Number) as unknown } },
  });
  expect(waiting.status?.assignedPod).toBeUndefined();
  expect(JSON.parse(waiting.status?.waitingInput?.schema ?? 'null')).toEqual(APPROVAL_SCHEMA);
  expect(waiting.status?.waitingInput?.checkpoint.digest).toMatch(/^sha256:[0-9a-f]{64}$/);

  // The Pod's only unit is free: another Run binds there and finishes while this one waits.
  await system.objects.createNamespacedCustomObject({
    ...custom(RUN_PLURAL),
    body: {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name: 'meanwhile' },
      spec: { runtime: RUNTIME, source: { inline: 'print("meanwhile")\n' }, mode: { task: {} } },
    },
  });
  const meanwhile = await system.waitForRun('meanwhile', 'terminal', isTerminal);
  expect(meanwhile.status?.phase).toBe('Succeeded');
  expect((await system.getRun('approval')).status?.phase).toBe('WaitingInput');

  // A response that fails the schema is refused with the reason; the Run keeps waiting.
  await respond(system.objects, 'approval-bad', 'approval', 'bad-1', { approved: 'yes' });
  const bad = acceptedCondition(await decided('approval-bad'));
  expect(bad).toMatchObject({ status: 'False', reason: 'InputInvalid' });
  expect(bad?.message).toContain('/approved: must be boolean');
  expect((await system.getRun('approval')).status).toMatchObject({ phase: 'WaitingInput', attempt: 1 });

  // A caller who may read Runs but not respond is refused by the API server.
  const readerToken = await system.serviceAccountToken('reader', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list'] },
  ]);
  const reader = clientFor('reader', readerToken);
  const refused = await respond(reader, 'approval-reader', 'approval', 'reader-1', { approved: true }).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(refused).toBeInstanceOf(ApiException);
  expect((refused as ApiException<unknown>).code).toBe(403);

  // One who may create RunInputs answers; the Run continues as attempt 2 from the checkpoint.
  const responderToken = await system.serviceAccountToken('responder', [
    { apiGroups: [API_GROUP], resources: [RUN_INPUT_PLURAL], verbs: ['create', 'get'] },
  ]);
  const responder = clientFor('responder', responderToken);
  await respond(responder, runInputName('approval', 'r-1'), 'approval', 'r-1', { approved: true, note: 'ship it' });
  const accepted = await decided(runInputName('approval', 'r-1'));
  expect(acceptedCondition(accepted)).toMatchObject({ status: 'True', reason: 'Accepted' });
  expect(accepted.status?.attempt).toBe(2);

  const done = await system.waitForRun('approval', 'terminal', isTerminal);
  expect(done.status).toMatchObject({
    phase: 'Succeeded',
    attempt: 2,
    outputs: { approved: 'true', draft: 'quarterly report', response: 'r-1', attempt: '2' },
    resume: { responseId: 'r-1', attempt: 2, checkpoint: { attempt: 1 } },
    responses: [{ responseId: 'r-1', attempt: 2 }],
  });

  // The same response ID again (another RunInput) starts nothing: DuplicateResponse, attempt 2.
  await respond(system.objects, 'approval-again', 'approval', 'r-1', { approved: true });
  const again = await decided('approval-again');
  expect(acceptedCondition(again)).toMatchObject({ status: 'True', reason: 'DuplicateResponse' });
  expect(again.status?.attempt).toBe(2);
  expect((await system.getRun('approval')).status).toMatchObject({ phase: 'Succeeded', attempt: 2 });
}, 240_000);

test('cancel while waiting ends the Run Cancelled at once; a response after that is refused', async () => {
  await createTask('cancel-me', WAITING_TASK);
  await waitWaiting('cancel-me');
  await system.objects.patchNamespacedCustomObject(
    { ...custom(RUN_PLURAL), name: 'cancel-me', body: { spec: { cancelRequested: true } } },
    mergePatch,
  );
  const done = await system.waitForRun('cancel-me', 'terminal', isTerminal, 30_000);
  expect(done.status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', attempt: 1 });
  await respond(system.objects, 'cancel-me-late', 'cancel-me', 'late', { approved: true });
  expect(acceptedCondition(await decided('cancel-me-late'))).toMatchObject({ status: 'False', reason: 'RunFinished' });
}, 180_000);

test('spec.timeout keeps counting while waiting: the Run ends Timeout without an owner', async () => {
  await createTask('slow-answer', WAITING_TASK, { timeout: '20s' });
  await waitWaiting('slow-answer');
  const done = await system.waitForRun('slow-answer', 'terminal', isTerminal, 60_000);
  expect(done.status).toMatchObject({ phase: 'Timeout', reason: 'Timeout', attempt: 1 });
  expect(done.status?.waitingInput).toBeUndefined();
}, 180_000);

test('a Runtime without checkpoint-v1 refuses the wait: user code hears CheckpointUnsupported and the Run fails', async () => {
  await system.createRuntime('plain', { language: 'python', runs: 1, replicas: 1 });
  await system.waitRuntimeReady('plain');
  await createTask(
    'unsupported',
    `import krt\ntry:\n    krt.wait_for_input(True, {"x": 1})\nexcept Exception as error:\n    print("refused:", getattr(error, "code", ""), error)\n    raise SystemExit(3)\n`,
    { runtime: 'plain' },
  );
  const done = await system.waitForRun('unsupported', 'terminal', isTerminal);
  expect(done.status).toMatchObject({ phase: 'Failed', exitCode: 3 });
  const refusals = (await system.logLinesContaining(['refused:'])).filter(({ line }) => line.includes('CheckpointUnsupported'));
  expect(refusals.length).toBeGreaterThan(0);
}, 180_000);

test('the RunInput is immutable', async () => {
  await respond(system.objects, 'frozen', 'approval', 'frozen-1', { approved: false });
  const error = await system.objects
    .patchNamespacedCustomObject({ ...custom(RUN_INPUT_PLURAL), name: 'frozen', body: { spec: { data: { approved: true } } } }, mergePatch)
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(error).toBeInstanceOf(ApiException);
  expect((error as ApiException<unknown>).code).toBe(422);
});
