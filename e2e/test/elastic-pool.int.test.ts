import { PolicyV1Api, Watch } from '@kubernetes/client-node';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, CONDITION_TYPES, EVENT_REASONS, LABELS, POD_ANNOTATIONS, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { kruntimesClients, refusalError } from '@kruntimes/run-client';
import type { KruntimesClients } from '@kruntimes/run-client';
import { currentPhase, findCondition, isSuccessful, isTerminal } from '@kruntimes/run-state';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';

/**
 * Elastic Runtime pools (docs/operations.md "Elastic pools") on the real control plane and Runtime Pods: a burst of
 * tasks scales a pool up without a person and back down to its minimum once the delay passed, removing only Pods
 * that hold nothing; a Runtime at zero Pods starts one for a Run; a change of spec.replicas through /scale is put
 * back with a Warning Event; every Runtime has its PodDisruptionBudget. Small numbers: the 200-Run burst is the
 * benchmark's (tools/benchmarks, elastic-pool-bench).
 */
const BURST = 'burst';
const ZERO = 'zero';
const TASKS = 12;
const RUNS_PER_POD = 4;
const MAX_PODS = 3;
const TEST_TIMEOUT_MS = 240_000;

let system: System;
let clients: KruntimesClients;

beforeAll(async () => {
  system = await System.start({ prefix: 'elastic-pool', gateway: false });
  clients = kruntimesClients(system.admin);
}, 120_000);

afterAll(async () => {
  await system.stop();
});

async function runtime(name: string): Promise<Runtime> {
  const found = await clients.runtimes.get(system.name, name);
  if (found === undefined) throw new Error(`Runtime ${name} not found`);
  return found;
}

async function livePods(name: string): Promise<V1Pod[]> {
  const pods = (await system.core.listNamespacedPod({ namespace: system.name, labelSelector: podLabelSelector(name) })).items;
  return pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined);
}

async function events(name: string): Promise<CoreV1Event[]> {
  return (await system.core.listNamespacedEvent({ namespace: system.name, fieldSelector: `involvedObject.name=${name}` })).items;
}

async function createTask(name: string, script: string): Promise<void> {
  const created = await clients.runs.create(system.name, {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'Run',
    metadata: { name },
    spec: { runtime: BURST, source: { inline: script }, mode: { task: {} } },
  });
  if (!created.ok) throw refusalError(created);
}

/** Every Pod seen going (deletionTimestamp set), with whether it was marked for scale-down and held a Run then. */
interface Removal {
  pod: string;
  marked: boolean;
  heldBy: string[];
}

/**
 * Watches the Runtime's Pods: the most Pods at once, and each removal as the watch first showed it (deletionTimestamp
 * set), with its mark and the Runs assigned to it then (read at once; a watch misses no update, a poll could).
 */
async function watchPool(name: string): Promise<{ stop: () => Promise<{ peak: number; removals: Removal[] }> }> {
  const live = new Set<string>();
  let peak = 0;
  const removals = new Map<string, Promise<Removal>>();
  const removal = async (pod: V1Pod): Promise<Removal> => {
    const runs = await clients.runs.list(system.name);
    const heldBy = runs
      .filter((run) => run.status?.assignedPodUID === pod.metadata?.uid && !isTerminal(currentPhase(run)))
      .map((run) => run.metadata.name ?? '');
    return { pod: pod.metadata?.name ?? '', marked: pod.metadata?.annotations?.[POD_ANNOTATIONS.scaleDown] !== undefined, heldBy };
  };
  const request = await new Watch(system.admin).watch(
    `/api/v1/namespaces/${system.name}/pods`,
    { labelSelector: podLabelSelector(name) },
    (type: string, pod: V1Pod) => {
      const podName = pod.metadata?.name ?? '';
      if (type === 'DELETED' || pod.metadata?.deletionTimestamp !== undefined) {
        live.delete(podName);
        if (!removals.has(podName)) removals.set(podName, removal(pod));
      } else {
        live.add(podName);
        peak = Math.max(peak, live.size);
      }
    },
    () => undefined,
  );
  return {
    stop: async () => {
      request.abort();
      return { peak, removals: await Promise.all(removals.values()) };
    },
  };
}

describe('an elastic pool', () => {
  it(
    'scales up for a burst without a person, runs every task to success, then goes back to its minimum removing only empty Pods',
    async () => {
      await system.createRuntime(BURST, {
        language: 'bash',
        runs: RUNS_PER_POD,
        drainSeconds: 5,
        scaling: { minReplicas: 1, maxReplicas: MAX_PODS, scaleDownDelaySeconds: 3 },
      });
      await system.waitRuntimeReady(BURST, 1);
      const watch = await watchPool(BURST);
      const started = performance.now();
      await Promise.all(Array.from({ length: TASKS }, (_, i) => createTask(`task-${String(i)}`, 'sleep 2')));
      const runs = await waitFor(
        `${TASKS} tasks finished`,
        async () => {
          const all = (await clients.runs.list(system.name)).filter((run) => run.spec.runtime === BURST);
          return all.length === TASKS && all.every((run) => isTerminal(currentPhase(run))) ? all : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      const burstSeconds = (performance.now() - started) / 1000;
      expect(runs.filter((run) => !isSuccessful(currentPhase(run))).map(describeRun)).toEqual([]);

      const down = await waitFor(
        'the pool back at 1 Pod',
        async () => {
          const [current, pods] = [await runtime(BURST), await livePods(BURST)];
          return current.spec.replicas === 1 && pods.length === 1 ? current : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      const { peak, removals } = await watch.stop();
      process.stdout.write(
        `elastic burst: ${TASKS} tasks in ${burstSeconds.toFixed(1)} s, peak ${peak} Pods, removed ${JSON.stringify(removals)}\n`,
      );
      // Up without a person; how far up depends on how many Runs it saw waiting at once (all, unless tasks ended first).
      expect(peak).toBeGreaterThan(1);
      expect(peak).toBeLessThanOrEqual(MAX_PODS);
      expect(removals.length).toBeGreaterThan(0);
      expect(removals.filter((removal) => !removal.marked || removal.heldBy.length > 0)).toEqual([]);

      const reasons = (await events(BURST)).map((event) => event.reason);
      expect(reasons).toEqual(expect.arrayContaining([EVENT_REASONS.scaledUp, EVENT_REASONS.scaledDown]));
      expect(down.status?.selector).toBe(podLabelSelector(BURST));
      expect(down.status?.pendingRuns).toBe(0);
      const scaling = await waitFor(
        'the status to say Steady at 1 Pod',
        async () => {
          const status = (await runtime(BURST)).status;
          const condition = findCondition(status?.conditions, CONDITION_TYPES.scaling);
          return condition?.reason === 'Steady' && status?.desiredReplicas === 1 ? condition : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      expect(scaling.message).toMatch(/^1 Pods for 0 held, 0 waiting/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'puts back a change of spec.replicas through /scale, with a Warning Event, and serves /scale its selector',
    async () => {
      const scale = { group: API_GROUP, version: API_VERSION, namespace: system.name, plural: RUNTIME_PLURAL, name: BURST };
      const read = (await system.objects.getNamespacedCustomObjectScale(scale)) as { status?: { selector?: string } };
      expect(read.status?.selector).toBe(podLabelSelector(BURST));
      // As `kubectl scale --replicas=3` does: a write of the scale subresource.
      await system.objects.replaceNamespacedCustomObjectScale({
        ...scale,
        body: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: BURST, namespace: system.name }, spec: { replicas: 3 } },
      });
      const warning = await waitFor(
        'a ScaleOverridden Warning',
        async () => (await events(BURST)).find((event) => event.reason === EVENT_REASONS.scaleOverridden),
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      expect(warning.type).toBe('Warning');
      expect(warning.message).toMatch(/set to 3 by someone else/);
      await waitFor(
        'spec.replicas back at 1 and 1 Pod',
        async () => ((await runtime(BURST)).spec.replicas === 1 && (await livePods(BURST)).length === 1 ? true : undefined),
        { timeoutMs: 60_000, intervalMs: 250 },
      );
    },
    TEST_TIMEOUT_MS,
  );

  it('has a PodDisruptionBudget of one Pod at a time, owned by the Runtime', async () => {
    const budget = await system.admin.makeApiClient(PolicyV1Api).readNamespacedPodDisruptionBudget({ namespace: system.name, name: BURST });
    expect(budget.spec?.maxUnavailable).toBe(1);
    expect(budget.spec?.selector?.matchLabels).toEqual({ [LABELS.runtime]: BURST, [LABELS.component]: 'runtime' });
    expect(budget.metadata?.ownerReferences?.map((owner) => [owner.kind, owner.name, owner.controller])).toEqual([
      ['Runtime', BURST, true],
    ]);
  });

  it(
    'scales from zero: a function Run on a Runtime at 0 Pods starts one and becomes Ready',
    async () => {
      await system.createRuntime(ZERO, {
        language: 'python',
        replicas: 0,
        runs: 2,
        scaling: { minReplicas: 0, maxReplicas: 2, scaleDownDelaySeconds: 60 },
      });
      await waitFor(
        'the Runtime at 0 Pods with its status',
        async () => ((await runtime(ZERO)).status?.selector === undefined ? undefined : true),
        {
          timeoutMs: 30_000,
          intervalMs: 250,
        },
      );
      expect(await livePods(ZERO)).toEqual([]);
      const started = performance.now();
      await system.createFunctionRun('fn-zero', ZERO, 'def handle(event, context):\n    return event\n', 'main:handle');
      const phases: string[] = [];
      const seen = new Set<string>();
      const note = (what: string): void => {
        if (seen.has(what)) return;
        seen.add(what);
        phases.push(`${((performance.now() - started) / 1000).toFixed(2)} s ${what}`);
      };
      note('Run created');
      await waitFor(
        'fn-zero Ready',
        async () => {
          const [current, pods, run] = [await runtime(ZERO), await livePods(ZERO), await system.getRun('fn-zero')];
          if ((current.spec.replicas ?? 0) > 0) note(`spec.replicas ${String(current.spec.replicas)} (${scalingReason(current)})`);
          if (pods.length > 0) note('Pod created');
          if (pods.some((pod) => isPodReady(pod))) note('Pod ready');
          const phase = currentPhase(run);
          note(`Run ${phase}`);
          return phase === 'Ready' ? run : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 100 },
      );
      process.stdout.write(`scale from zero:\n  ${phases.join('\n  ')}\n`);
      expect(phases.some((line) => line.endsWith('Pod ready'))).toBe(true);
      expect((await runtime(ZERO)).spec.replicas).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );
});

function scalingReason(current: Runtime): string {
  return findCondition(current.status?.conditions, CONDITION_TYPES.scaling)?.reason ?? 'no Scaling condition yet';
}

function describeRun(run: Run): string {
  return `${run.metadata.name ?? ''}: ${currentPhase(run)} ${run.status?.reason ?? ''} ${run.status?.message ?? ''}`;
}
