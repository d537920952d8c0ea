import { API_GROUP, API_VERSION, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL, RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { waitFor } from '@kruntimes/testing';
import { Environment, WAIT, objects, recordingLogger, serviceAccountKubeConfig } from './environment.ts';
import type { RunObserver } from './environment.ts';

const HANDLER = `
def handle(event, context):
    return event
`;

let env: Environment;
let scheduler: Scheduler | undefined;
let observer: RunObserver | undefined;

beforeEach(async () => {
  env = await Environment.start('e2e-scheduling', { runtimed: 'real' });
});

afterEach(async () => {
  observer?.stop();
  await scheduler?.stop();
  await env.stop();
});

const phase = (run: Run): string => run.status?.phase ?? 'Pending';

test('end to end with the real runtimed: 3 x 2 Python Runtime, 7 function Runs, 6 Ready, the 7th Ready once a cancelled one released its unit', async () => {
  await env.createRuntime('py', { language: 'python', replicas: 3, runs: 2 });
  await env.readyPods('py', 3);
  await waitFor('Runtime capacity 6', async () => ((await env.getRuntime('py')).status?.totalCapacity === 6 ? true : undefined), WAIT);
  observer = await env.observeRuns(2);
  const logger = recordingLogger();
  scheduler = new Scheduler({
    kubeConfig: await serviceAccountKubeConfig(env.name, 'scheduler', SCHEDULER_RULES),
    namespace: env.name,
    logger,
  });
  await scheduler.start();

  for (let i = 1; i <= 7; i += 1) {
    await env.createRun(`fn-${i}`, 'py', { source: { inline: HANDLER }, mode: { function: { handler: 'main:handle' } } });
  }
  await waitFor(
    '6 function Runs Ready and fn-7 Pending with NoCapacity',
    async () => {
      const runs = await env.listRuns();
      const ready = runs.filter((run) => phase(run) === 'Ready').length;
      const seventh = runs.find((run) => run.metadata.name === 'fn-7');
      return ready === 6 && seventh !== undefined && phase(seventh) === 'Pending' && seventh.status?.reason === RUN_REASONS.noCapacity
        ? true
        : undefined;
    },
    WAIT,
  );

  // Cancel one: runtimed unregisters it and drops the cleanup finalizer; only then is its unit free.
  const victim = await env.getRun('fn-2');
  await objects.patchNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUN_PLURAL,
    name: 'fn-2',
    body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
  });
  const seventh = await env.waitForRun('fn-7', 'Ready', (run) => phase(run) === 'Ready');
  expect(seventh.status?.assignedPodUID).toBe(victim.status?.assignedPodUID);
  const cancelled = await env.getRun('fn-2');
  expect(phase(cancelled)).toBe('Cancelled');
  expect(cancelled.metadata.finalizers ?? []).not.toContain(REGISTRATION_CLEANUP_FINALIZER);

  observer.stop();
  expect(observer.overcommits).toEqual([]);
  expect(observer.doubleBound()).toEqual([]);
  expect(observer.maxHeld).toBe(2);
  expect(logger.errors).toEqual([]);
});
