import type { V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { POD_ANNOTATIONS, RUN_REASONS } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { Run } from '@kruntimes/api';
import { currentTemplateHash } from '@kruntimes/scheduler-core';
import type { Scheduler } from '@kruntimes/scheduler-core';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { waitFor } from '@kruntimes/testing';
import { Environment, WAIT, admin, core, objects, recordingLogger } from './environment.ts';

let env: Environment;
let scheduler: Scheduler | undefined;
let logger: ReturnType<typeof recordingLogger>;

beforeEach(async () => {
  env = await Environment.start('placement');
  logger = recordingLogger();
});

afterEach(async () => {
  await scheduler?.stop();
  scheduler = undefined;
  await env.stop();
});

async function startScheduler(): Promise<Scheduler> {
  scheduler = await env.startScheduler(logger);
  return scheduler;
}

const phase = (run: Run): string => run.status?.phase ?? 'Pending';

/** Waits until `count` of the namespace's Runs are Scheduled; all of them. */
async function scheduled(count: number): Promise<Run[]> {
  return waitFor(
    `${count} Runs Scheduled`,
    async () => {
      const runs = await env.listRuns();
      return runs.filter((run) => phase(run) === 'Scheduled').length === count ? runs : undefined;
    },
    WAIT,
  );
}

/** Runs held per Pod, in the order of `pods`. */
function perPod(pods: readonly V1Pod[], runs: readonly Run[]): number[] {
  return pods.map((pod) => runs.filter((run) => phase(run) === 'Scheduled' && run.status?.assignedPodUID === pod.metadata?.uid).length);
}

async function annotatePod(pod: V1Pod, value: string | null): Promise<void> {
  await core.patchNamespacedPod(
    { namespace: env.name, name: pod.metadata?.name ?? '', body: { metadata: { annotations: { [POD_ANNOTATIONS.scaleDown]: value } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

test('without spec.scaling a burst spreads exactly: 8 Runs at once on 8 Pods x 4, one per Pod, and so on for 4 rounds (bursts and one by one)', async () => {
  await env.createRuntime('wide', { replicas: 8, runs: 4 });
  const pods = await env.readyPods('wide', 8);
  await startScheduler();
  const rounds: number[][] = [];
  for (let round = 1; round <= 4; round += 1) {
    const names = Array.from({ length: 8 }, (_, i) => `r${round}-${i}`);
    if (round % 2 === 1) await Promise.all(names.map((name) => env.createRun(name, 'wide')));
    else for (const name of names) await env.createRun(name, 'wide');
    rounds.push(perPod(pods, await scheduled(8 * round)));
  }
  expect(rounds).toEqual([1, 2, 3, 4].map((held) => Array.from({ length: 8 }, () => held)));
  expect(logger.errors).toEqual([]);
});

test('with spec.scaling Runs pack onto the fullest Pod, and a Run without a slot waits WaitingForCapacity with the Runtime state', async () => {
  // min = max: whatever the autoscaler decides, the pool stays at 3 Pods and none is marked.
  await env.createRuntime('packed', { replicas: 3, runs: 2, scaling: { minReplicas: 3, maxReplicas: 3, scaleDownDelaySeconds: 3600 } });
  const pods = await env.readyPods('packed', 3);
  const started = await startScheduler();

  for (let i = 1; i <= 4; i += 1) await env.createRun(`p-${i}`, 'packed');
  // Spread would give [2, 1, 1]: packing fills two Pods and leaves the third empty.
  expect(perPod(pods, await scheduled(4)).sort()).toEqual([0, 2, 2]);
  for (let i = 5; i <= 6; i += 1) await env.createRun(`p-${i}`, 'packed');
  expect(perPod(pods, await scheduled(6))).toEqual([2, 2, 2]);

  await env.createRun('p-7', 'packed');
  const waiting = await env.waitForRun('p-7', 'WaitingForCapacity', (run) => run.status?.reason === RUN_REASONS.waitingForCapacity);
  expect(waiting.status).toMatchObject({
    phase: 'Pending',
    message: 'waiting for a slot: Runtime packed has 3 of 3 Pods ready, 6 of 6 slots used; at its maximum of 3 Pods',
  });
  expect(started.metrics.render()).toContain(`kruntimes_scheduler_waiting_for_capacity_runs{namespace="${env.name}",runtime="packed"} 1\n`);

  // A slot frees (the test plays runtimed): the waiting Run takes it.
  const freed = (await env.getRun('p-3')).status?.assignedPodUID;
  await env.act('p-3', 'runtimed', { type: 'Claim' });
  await env.act('p-3', 'runtimed', { type: 'Succeeded' });
  const bound = await env.waitForRun('p-7', 'bound', (run) => phase(run) === 'Scheduled');
  expect(bound.status?.assignedPodUID).toBe(freed);
  await waitFor(
    'the waiting gauge to drop',
    () => Promise.resolve(started.metrics.render().includes('kruntimes_scheduler_waiting_for_capacity_runs{') ? undefined : true),
    WAIT,
  );
  expect(logger.errors).toEqual([]);
});

test('a Pod marked for scale-down receives nothing until the mark is removed; every Pod after a rollout is of the newest template', async () => {
  await env.createRuntime('marked', { replicas: 2, runs: 2 });
  const [going, staying] = await env.readyPods('marked', 2);
  if (going === undefined || staying === undefined) throw new Error('two Pods expected');
  await annotatePod(going, 'true');
  await startScheduler();

  for (let i = 1; i <= 3; i += 1) await env.createRun(`m-${i}`, 'marked');
  const waiting = await env.waitForRun('m-3', 'NoCapacity', (run) => run.status?.reason === RUN_REASONS.noCapacity);
  expect(waiting.status?.message).toBe('all 1 ready Pods are full');
  expect(perPod([going, staying], await env.listRuns())).toEqual([0, 2]);

  // The mark is removed (the Pod is needed again): the Pod event wakes the Runtime and the Run binds there.
  await annotatePod(going, null);
  const bound = await env.waitForRun('m-3', 'bound', (run) => phase(run) === 'Scheduled');
  expect(bound.status?.assignedPodUID).toBe(going.metadata?.uid);

  // What the scheduler reads to prefer the Pods a rollout keeps: the ReplicaSet of the highest revision.
  const apps = admin.makeApiClient(AppsV1Api);
  const replicaSets = async (): Promise<V1ReplicaSet[]> =>
    (await apps.listNamespacedReplicaSet({ namespace: env.name, labelSelector: podLabelSelector('marked') })).items;
  const before = currentTemplateHash(await replicaSets());
  expect(before).toBeDefined();
  expect([going, staying].map((pod) => pod.metadata?.labels?.['pod-template-hash'])).toEqual([before, before]);
  await objects.patchNamespacedCustomObject({
    group: 'kruntimes.io',
    version: 'v1alpha1',
    namespace: env.name,
    plural: 'runtimes',
    name: 'marked',
    body: [{ op: 'add', path: '/spec/resources', value: { limits: { memory: '300Mi' } } }],
  });
  const after = await waitFor(
    'a new template',
    async () => {
      const hash = currentTemplateHash(await replicaSets());
      return hash !== undefined && hash !== before ? hash : undefined;
    },
    WAIT,
  );
  await waitFor(
    'only the 2 Pods of the new template left, ready',
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: env.name, labelSelector: podLabelSelector('marked') })).items;
      const current = pods.filter((pod) => pod.metadata?.labels?.['pod-template-hash'] === after && isPodReady(pod));
      return pods.length === 2 && current.length === 2 ? true : undefined;
    },
    WAIT,
  );
  expect(logger.errors).toEqual([]);
});

test('a Pod of an older template gets a Run only when the Pods of the newest one are full, however empty it is', async () => {
  await env.createRuntime('rolling', { replicas: 1, runs: 2 });
  const [current] = await env.readyPods('rolling', 1);
  if (current === undefined) throw new Error('one Pod expected');
  // A Pod left from an older template, as during a rollout: the Deployment's own Pod
  // template under another pod-template-hash, which no ReplicaSet of the Deployment owns.
  const apps = admin.makeApiClient(AppsV1Api);
  const template = (await apps.readNamespacedDeployment({ namespace: env.name, name: 'rolling' })).spec?.template;
  await core.createNamespacedPod({
    namespace: env.name,
    body: {
      metadata: { name: 'rolling-older', labels: { ...template?.metadata?.labels, 'pod-template-hash': 'older' } },
      spec: template?.spec ?? { containers: [] },
    },
  });
  const pods = await env.readyPods('rolling', 2);
  const older = pods.find((pod) => pod.metadata?.name === 'rolling-older');
  if (older === undefined) throw new Error('the older Pod is not ready');
  await startScheduler();

  // Spreading alone would put the second Run on the emptier older Pod.
  await env.createRun('o-1', 'rolling');
  await scheduled(1);
  await env.createRun('o-2', 'rolling');
  await env.createRun('o-3', 'rolling');
  const runs = await scheduled(3);
  expect(perPod([current, older], runs)).toEqual([2, 1]);
  expect(runs.find((run) => run.metadata.name === 'o-3')?.status?.assignedPodUID).toBe(older.metadata?.uid);
  expect(logger.errors).toEqual([]);
});
