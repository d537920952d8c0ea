import { API_GROUP, API_VERSION, NAMESPACE_BLOCKED_LABEL, RUNTIME_PLURAL, RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { CoreV1Event } from '@kubernetes/client-node';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { waitFor } from '@kruntimes/testing';
import { Environment, WAIT, core, objects, recordingLogger, serviceAccountKubeConfig } from './environment.ts';
import type { RunObserver } from './environment.ts';

let env: Environment;
let scheduler: Scheduler | undefined;
let observer: RunObserver | undefined;
let logger: ReturnType<typeof recordingLogger>;

beforeEach(async () => {
  env = await Environment.start('block-policy');
  logger = recordingLogger();
});

afterEach(async () => {
  observer?.stop();
  observer = undefined;
  await scheduler?.stop();
  scheduler = undefined;
  await env.stop();
});

const phase = (run: Run): string => run.status?.phase ?? 'Pending';

async function setSuspend(runtime: string, suspend: boolean): Promise<void> {
  await objects.patchNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUNTIME_PLURAL,
    name: runtime,
    body: [{ op: 'add', path: '/spec/suspend', value: suspend }],
  });
}

/** JSON Patch escapes `/` in a label key as `~1`. */
const BLOCKED_LABEL_PATH = `/metadata/labels/${NAMESPACE_BLOCKED_LABEL.replace('/', '~1')}`;

async function setBlocked(blocked: boolean): Promise<void> {
  await core.patchNamespace({
    name: env.name,
    body: [blocked ? { op: 'add', path: BLOCKED_LABEL_PATH, value: 'true' } : { op: 'remove', path: BLOCKED_LABEL_PATH }],
  });
}

/** The Warning Events the scheduler recorded on a Run. */
async function eventsOf(run: string): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: env.name, fieldSelector: `involvedObject.name=${run}` });
  return list.items.filter((event) => event.reportingComponent === 'kruntimes-scheduler');
}

async function waitForEvent(run: string, reason: string): Promise<CoreV1Event> {
  return waitFor(
    `a ${reason} Event on Run ${run}`,
    async () => (await eventsOf(run)).find((event) => event.reason === reason && event.type === 'Warning'),
    WAIT,
  );
}

test('a suspended Runtime and a blocked namespace bind no new Run, leave running ones alone, and lifting either binds the waiting Runs', async () => {
  await env.createRuntime('shell', { replicas: 1, runs: 4 });
  await env.readyPods('shell', 1);
  observer = await env.observeRuns(4);
  scheduler = new Scheduler({
    // Least privilege: the scheduler's own rules (its namespaces read is a ClusterRole).
    kubeConfig: await serviceAccountKubeConfig(env.name, 'scheduler', SCHEDULER_RULES),
    namespace: env.name,
    logger,
  });
  await scheduler.start();

  // A Run bound and running before any block: the test plays runtimed's claim.
  await env.createRun('before', 'shell');
  await env.waitForRun('before', 'bound', (run) => phase(run) === 'Scheduled');
  const running = await env.act('before', 'runtimed', { type: 'Claim' });

  // The Runtime suspended: a new Run waits with the reason and an Event; the running one is untouched.
  await setSuspend('shell', true);
  await env.createRun('while-suspended', 'shell');
  const suspended = await env.waitForRun(
    'while-suspended',
    'Pending with RuntimeSuspended',
    (run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.runtimeSuspended,
  );
  const ready = suspended.status?.conditions?.find((c) => c.type === 'Ready');
  expect(ready).toMatchObject({ status: 'False', reason: RUN_REASONS.runtimeSuspended });
  expect(ready?.message).toContain('Runtime shell is suspended');
  expect((await waitForEvent('while-suspended', RUN_REASONS.runtimeSuspended)).message).toContain('spec.suspend: true');
  const stillRunning = await env.getRun('before');
  expect(phase(stillRunning)).toBe('Running');
  expect(stillRunning.status?.assignedPodUID).toBe(running.status?.assignedPodUID);
  expect(stillRunning.metadata.resourceVersion).toBe(running.metadata.resourceVersion);

  // Lifted: the waiting Run binds (the Runtime's change wakes the scheduler).
  await setSuspend('shell', false);
  await env.waitForRun('while-suspended', 'bound after the suspend was lifted', (run) => phase(run) === 'Scheduled');

  // The namespace blocked: the same, with its own reason.
  await setBlocked(true);
  await env.createRun('while-blocked', 'shell');
  await env.waitForRun(
    'while-blocked',
    'Pending with NamespaceBlocked',
    (run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.namespaceBlocked,
  );
  expect((await waitForEvent('while-blocked', RUN_REASONS.namespaceBlocked)).message).toContain(`${NAMESPACE_BLOCKED_LABEL}=true`);
  expect((await env.getRun('before')).metadata.resourceVersion).toBe(running.metadata.resourceVersion);
  expect(phase(await env.getRun('while-suspended'))).toBe('Scheduled');

  // Both at once: the Runtime's suspend is the reason named first; lifting only one binds nothing.
  await setSuspend('shell', true);
  await env.waitForRun('while-blocked', 'RuntimeSuspended', (run) => run.status?.reason === RUN_REASONS.runtimeSuspended);
  await setSuspend('shell', false);
  await env.waitForRun('while-blocked', 'NamespaceBlocked again', (run) => run.status?.reason === RUN_REASONS.namespaceBlocked);
  expect(observer.everAssigned.has('while-blocked')).toBe(false);

  // The label removed: the namespace's change wakes the scheduler and the Run binds.
  await setBlocked(false);
  await env.waitForRun('while-blocked', 'bound after the namespace was unblocked', (run) => phase(run) === 'Scheduled');

  observer.stop();
  expect(observer.watchErrors).toEqual([]);
  expect(observer.overcommits).toEqual([]);
  expect(observer.doubleBound()).toEqual([]);
  expect(logger.errors).toEqual([]);
  expect(env.logger.errors).toEqual([]);
});
