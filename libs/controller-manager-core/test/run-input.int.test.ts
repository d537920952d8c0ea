// The RunInput controller of the controller-manager, with exactly the chart's RBAC, against the real
// control plane. A Run is put into WaitingInput as the scheduler and runtimed would (status writes
// through the state machine); responses are RunInputs created by users with their own RBAC.
import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { CustomObjectsApi as CustomObjects } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_INPUT_PLURAL, RUN_PLURAL } from '@kruntimes/api';
import type { Condition, Run, RunInput, RunSpec } from '@kruntimes/api';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { runInputName } from '@kruntimes/input-core';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, waitFor, testWorkloadConfig } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { CONTROLLER_MANAGER_RULES } from '../src/rbac.ts';
import { ControllerManager } from '../src/manager.ts';
import { RESPONSE_EVENT_REASONS } from '../src/run-input-reconciler.ts';

const WAIT = { timeoutMs: 30_000, intervalMs: 200 };
const SCHEMA = JSON.stringify({
  type: 'object',
  properties: { approved: { type: 'boolean' }, note: { type: 'string' } },
  required: ['approved'],
  additionalProperties: false,
});
const CHECKPOINT = { digest: `sha256:${'ab'.repeat(32)}`, size: 42 };
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);

let internalCa: CertificateAuthority;
let namespace: TestNamespace;
let manager: ControllerManager | undefined;
let errors: object[];

beforeAll(async () => {
  internalCa = await createCertificateAuthority();
});
beforeEach(async () => {
  errors = [];
  namespace = await cluster.createNamespace({ prefix: 'run-input' });
  await startManager();
});
afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await namespace.delete();
  expect(errors).toEqual([]);
});

const logger: ControllerLogger = { error: (object, message) => errors.push({ ...object, message }), debug: () => undefined };
const custom = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural });

async function startManager(): Promise<void> {
  manager = new ControllerManager({
    // Least privilege: exactly the rules the chart grants, so a missing one fails here.
    kubeConfig: await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig('controller-manager', CONTROLLER_MANAGER_RULES),
    internalCa,
    namespace: namespace.name,
    logger,
    workload: testWorkloadConfig({ terminationGracePeriodSeconds: 2 }),
  });
  await manager.start();
}

const rfc3339 = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

async function getRun(name: string): Promise<Run> {
  return (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name })) as Run;
}

/** Plays the scheduler and runtimed: each step a status write through the state machine. */
async function act(name: string, steps: [WriterRole, RunEvent][]): Promise<Run> {
  let run = await getRun(name);
  for (const [writer, event] of steps) {
    const result = transition({ run, event, writer, now: rfc3339() });
    if (!result.ok) throw result.error;
    run = (await objects.replaceNamespacedCustomObjectStatus({
      ...custom(RUN_PLURAL),
      name,
      body: { ...run, status: result.status },
    })) as Run;
  }
  return run;
}

const bind: [WriterRole, RunEvent] = ['scheduler', { type: 'Bind', pod: 'p', podUID: '00000000-0000-4000-8000-000000000001' }];
const claim: [WriterRole, RunEvent] = ['runtimed', { type: 'Claim' }];
const waitForInput: [WriterRole, RunEvent] = ['runtimed', { type: 'WaitForInput', schema: SCHEMA, checkpoint: CHECKPOINT }];

/** A task Run that attempt 1 ran until it asked for input: WaitingInput. */
async function waitingRun(name: string, spec: Partial<RunSpec> = {}): Promise<Run> {
  const body: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime: 'python', source: { inline: 'pass' }, mode: { task: {} }, ...spec },
  };
  await objects.createNamespacedCustomObject({ ...custom(RUN_PLURAL), body });
  const run = await act(name, [bind, claim, waitForInput]);
  expect(run.status?.phase).toBe('WaitingInput');
  return run;
}

async function respond(
  runName: string,
  responseId: string,
  data: unknown,
  options: { name?: string; as?: CustomObjects } = {},
): Promise<string> {
  const name = options.name ?? runInputName(runName, responseId);
  const body: RunInput = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunInput',
    metadata: { name },
    spec: { runName, responseId, data },
  };
  await (options.as ?? objects).createNamespacedCustomObject({ ...custom(RUN_INPUT_PLURAL), body });
  return name;
}

async function getInput(name: string): Promise<RunInput> {
  return (await objects.getNamespacedCustomObject({ ...custom(RUN_INPUT_PLURAL), name })) as RunInput;
}

/** The RunInput once decided: its Accepted condition and status. */
async function decided(name: string): Promise<{ input: RunInput; accepted: Condition }> {
  return waitFor(
    `RunInput ${name} decided`,
    async () => {
      const input = await getInput(name);
      const accepted = input.status?.conditions?.find((condition) => condition.type === 'Accepted');
      return accepted === undefined ? undefined : { input, accepted };
    },
    WAIT,
  );
}

async function phaseReached(name: string, phase: string): Promise<Run> {
  return waitFor(
    `Run ${name} ${phase}`,
    async () => {
      const run = await getRun(name);
      return run.status?.phase === phase ? run : undefined;
    },
    WAIT,
  );
}

describe('the RunInput controller', () => {
  it('a valid response continues the Run as attempt + 1 from the checkpoint: Pending, status.resume, RunInput Accepted', async () => {
    const before = await waitingRun('report');
    const name = await respond('report', 'approval-1', { approved: true, note: 'ok' });
    const { input, accepted } = await decided(name);
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1 });
    expect(input.status).toMatchObject({ attempt: 2, runUID: before.metadata.uid, observedGeneration: 1 });

    const run = await getRun('report');
    expect(run.status).toMatchObject({
      phase: 'Pending',
      attempt: 2,
      reason: 'InputReceived',
      resume: {
        checkpoint: { attempt: 1, ...CHECKPOINT },
        responseId: 'approval-1',
        runInput: name,
        input: '{"approved":true,"note":"ok"}',
        attempt: 2,
      },
      responses: [{ responseId: 'approval-1', runInput: name, attempt: 2 }],
    });
    expect(run.status?.waitingInput).toBeUndefined();

    // An Event on the Run says what became of the response.
    const event = await waitFor(
      'the ResponseAccepted Event on the Run',
      async () =>
        (await core.listNamespacedEvent({ namespace: namespace.name, fieldSelector: 'involvedObject.name=report' })).items.find(
          (item) => item.reason === RESPONSE_EVENT_REASONS.accepted,
        ),
      WAIT,
    );
    expect(event).toMatchObject({ type: 'Normal', involvedObject: { kind: 'Run', uid: before.metadata.uid } });
    expect(event.message).toContain('attempt 2');
  });

  it('a response failing the schema is refused (InputInvalid, naming the violation); the Run keeps waiting', async () => {
    await waitingRun('report');
    const name = await respond('report', 'bad-1', { approved: 'yes' });
    const { input, accepted } = await decided(name);
    expect(accepted).toMatchObject({ status: 'False', reason: 'InputInvalid', observedGeneration: 1 });
    expect(accepted.message).toContain('/approved: must be boolean');
    expect(input.status?.attempt).toBeUndefined();
    const run = await getRun('report');
    expect(run.status).toMatchObject({ phase: 'WaitingInput', attempt: 1 });

    // The Run still takes a valid response afterwards.
    const good = await respond('report', 'good-1', { approved: false });
    expect((await decided(good)).accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
  });

  it('a response to a Run that does not exist, or is not waiting, is refused for good', async () => {
    const missing = await respond('nothing-here', 'r-1', { approved: true });
    expect((await decided(missing)).accepted).toMatchObject({ status: 'False', reason: 'RunNotFound' });

    await objects.createNamespacedCustomObject({
      ...custom(RUN_PLURAL),
      body: {
        apiVersion: 'kruntimes.io/v1alpha1',
        kind: 'Run',
        metadata: { name: 'busy' },
        spec: { runtime: 'python', source: { inline: 'pass' }, mode: { task: {} } },
      },
    });
    await act('busy', [bind, claim]);
    const early = await respond('busy', 'r-1', { approved: true });
    const { input, accepted } = await decided(early);
    expect(accepted).toMatchObject({ status: 'False', reason: 'RunNotWaiting' });
    expect(input.status?.runUID).toBeDefined();

    // Decided is final: the Run waiting now does not make the earlier refusal an acceptance.
    await act('busy', [waitForInput]);
    const later = await respond('busy', 'r-2', { approved: true });
    expect((await decided(later)).accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect((await getInput(early)).status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'RunNotWaiting' });
  });

  it('the same response ID twice (two RunInputs): one continuation; the second is DuplicateResponse with the same attempt', async () => {
    await waitingRun('report');
    const first = await respond('report', 'approval-1', { approved: true });
    const { accepted, input } = await decided(first);
    expect(accepted.reason).toBe('Accepted');
    const second = await respond('report', 'approval-1', { approved: true }, { name: 'report-again' });
    const duplicate = await decided(second);
    expect(duplicate.accepted).toMatchObject({ status: 'True', reason: 'DuplicateResponse' });
    expect(duplicate.input.status?.attempt).toBe(input.status?.attempt);
    const run = await getRun('report');
    expect(run.status?.attempt).toBe(2);
    expect(run.status?.responses).toHaveLength(1);
  });

  it('a RunInput that continued the Run but whose status write was lost is recorded Accepted, not a duplicate of itself', async () => {
    await waitingRun('report');
    const name = runInputName('report', 'approval-1');
    // The controller's first write landed (the Run continued with this RunInput), then it stopped before the second.
    await act('report', [
      ['controller-manager', { type: 'InputReceived', responseId: 'approval-1', runInput: name, input: '{"approved":true}' }],
    ]);
    await respond('report', 'approval-1', { approved: true });
    const { input, accepted } = await decided(name);
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(input.status?.attempt).toBe(2);
    expect((await getRun('report')).status?.attempt).toBe(2);
  });

  it('two different responses racing for one wait: exactly one continues it', async () => {
    await waitingRun('report');
    const names = await Promise.all(['a', 'b', 'c'].map((id) => respond('report', `race-${id}`, { approved: id === 'a' })));
    const outcomes = await Promise.all(names.map(async (name) => (await decided(name)).accepted));
    const winners = outcomes.filter((condition) => condition.status === 'True');
    expect(winners).toHaveLength(1);
    expect(winners[0]?.reason).toBe('Accepted');
    for (const loser of outcomes.filter((condition) => condition.status !== 'True')) expect(loser.reason).toBe('RunNotWaiting');
    const run = await getRun('report');
    expect(run.status).toMatchObject({ phase: 'Pending', attempt: 2 });
    expect(run.status?.responses).toHaveLength(1);
  });

  it('cancel while waiting ends the Run Cancelled at once; a response after it is refused', async () => {
    await waitingRun('report');
    await objects.patchNamespacedCustomObject({
      ...custom(RUN_PLURAL),
      name: 'report',
      body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
    });
    const run = await phaseReached('report', 'Cancelled');
    expect(run.status).toMatchObject({ reason: 'Cancelled', attempt: 1 });
    expect(run.status?.waitingInput).toBeUndefined();
    const late = await respond('report', 'late', { approved: true });
    expect((await decided(late)).accepted).toMatchObject({ status: 'False', reason: 'RunFinished' });
  });

  it('spec.timeout keeps counting while waiting: the Run ends Timeout', async () => {
    await waitingRun('report', { timeout: '3s' });
    const run = await phaseReached('report', 'Timeout');
    expect(run.status?.reason).toBe('Timeout');
    expect(run.status?.message).toContain('waited for input');
  });

  it('the right to respond is RBAC create on runinputs, checked by the API server', async () => {
    await waitingRun('report');
    const access = new NamespaceAccess(cluster, namespace.name);
    await access.grantGetRuns('bob');
    await access.grantUser('alice', 'responder', [
      { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get'] },
      { apiGroups: [API_GROUP], resources: [RUN_INPUT_PLURAL], verbs: ['create', 'get'] },
    ]);
    const bob = cluster.kubeConfig('bob').makeApiClient(CustomObjectsApi);
    const alice = cluster.kubeConfig('alice').makeApiClient(CustomObjectsApi);
    const refused = await respond('report', 'from-bob', { approved: true }, { as: bob }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiException);
    expect((refused as ApiException<unknown>).code).toBe(403);
    const name = await respond('report', 'from-alice', { approved: true }, { as: alice });
    expect((await decided(name)).accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
  });

  it('a RunInput is immutable (CEL): an update of its spec is refused', async () => {
    await waitingRun('report');
    const name = await respond('report', 'approval-1', { approved: false });
    // The controller writes its decision to the RunInput's status: read it after that, so that
    // the update below is refused for what it changes (422), not for a stale version (409).
    await decided(name);
    const input = await getInput(name);
    const refused = await objects
      .replaceNamespacedCustomObject({
        ...custom(RUN_INPUT_PLURAL),
        name,
        body: { ...input, spec: { ...input.spec, data: { approved: true } } },
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(ApiException);
    expect((refused as ApiException<unknown>).code).toBe(422);
    expect(String((refused as ApiException<unknown>).body)).toContain('immutable');
  });
});
