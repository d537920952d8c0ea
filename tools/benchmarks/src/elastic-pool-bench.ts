/**
 * Benchmark (not a test) of an elastic Runtime pool against a fixed one, on a real control plane with local-node Pods
 * (the real runtimed and Bash Runtime Server, controller-manager with its autoscaler, scheduler):
 *   node tools/benchmarks/src/elastic-pool-bench.ts [tasks=200] [maxPods=8] [runsPerPod=4]
 *
 * The same burst, `tasks` task Runs `sleep 2` created at once, first on a Runtime of a fixed `maxPods` Pods (all
 * ready before the burst), then, once that Runtime is gone, on a Runtime with spec.scaling {minReplicas 1,
 * maxReplicas `maxPods`} starting at 1 ready Pod. For each: time to bind (create -> Scheduled, as this process's
 * Run watch first showed it) p50/p99/max, the total time (the first create to the last Succeeded), the Pods over
 * time (live/ready every 2 s), and at the end the ratio elastic/fixed (the goal: at most 1.5). The elastic
 * pool is then followed back down to its 1 Pod (scaleDownDelaySeconds 10).
 *
 * The Pods run runtimed and the Runtime Server as the images ship them, from their bundled builds
 * (`npx nx run benchmarks:elastic-pool` builds them first): the elastic pool's time is mostly its new Pods
 * starting, and a process started from the TypeScript sources loads about 1,300 modules (0.9 CPU-s against
 * 0.2), which is the harness's cost, not the product's. KRT_E2E_ENTRYPOINTS=sources runs the sources.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { API_GROUP, API_VERSION } from '@kruntimes/api';
import type { RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { System } from '@kruntimes/e2e';
import { kruntimesClients, refusalError } from '@kruntimes/run-client';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { Cluster, ControlPlane, REPO_ROOT, RunPhaseWatch, formatLatencies, summarizeLatencies, waitFor } from '@kruntimes/testing';

process.env.KRT_E2E_ENTRYPOINTS ??= 'bundle';
const TASKS = Number(process.argv[2] ?? 200);
const MAX_PODS = Number(process.argv[3] ?? 8);
const RUNS_PER_POD = Number(process.argv[4] ?? 4);
const SCALE_DOWN_DELAY_SECONDS = 10;
const SAMPLE_MS = 2_000;

const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

interface BurstResult {
  bindMs: number[];
  totalMs: number;
  pods: string[];
  failed: string[];
}

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
try {
  system = await System.start({ prefix: 'bench-elastic', cluster: new Cluster(controlPlane.info), gateway: false });
  const current = system;
  const clients = kruntimesClients(current.admin);
  const watch = await RunPhaseWatch.start(current.admin, current.name);

  const podCounts = async (runtime: string): Promise<{ live: number; ready: number }> => {
    const pods = (await current.core.listNamespacedPod({ namespace: current.name, labelSelector: podLabelSelector(runtime) })).items;
    const live = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined);
    return { live: live.length, ready: live.filter((pod) => isPodReady(pod)).length };
  };

  /** Pods (live/ready) every SAMPLE_MS until stopped, as `t=4s 3/1`. */
  const samplePods = (runtime: string, startedAt: number): { stop: () => Promise<string[]> } => {
    const samples: string[] = [];
    const state = { running: true };
    const loop = (async () => {
      while (state.running) {
        const { live, ready } = await podCounts(runtime);
        samples.push(`t=${String(Math.round((performance.now() - startedAt) / 1000))}s ${String(live)}/${String(ready)}`);
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
      }
    })();
    return {
      stop: async () => {
        state.running = false;
        await loop;
        return samples;
      },
    };
  };

  const burst = async (runtime: string): Promise<BurstResult> => {
    const names = Array.from({ length: TASKS }, (_, i) => `${runtime}-${String(i)}`);
    const createdAt = new Map<string, number>();
    const startedAt = performance.now();
    const sampler = samplePods(runtime, startedAt);
    await Promise.all(
      names.map(async (name) => {
        createdAt.set(name, performance.now());
        const created = await clients.runs.create(current.name, {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: 'Run',
          metadata: { name },
          spec: { runtime, source: { inline: 'sleep 2' }, mode: { task: {} } },
        });
        if (!created.ok) throw refusalError(created);
      }),
    );
    const ended = (name: string): boolean =>
      ['Succeeded', 'Failed', 'Interrupted', 'Cancelled', 'Timeout'].some((phase) => watch.seenAt(name, phase) !== undefined);
    await watch.until(() => names.every(ended), 600_000, `${runtime}: every task ended`);
    const lastEnd = Math.max(...names.map((name) => watch.seenAt(name, 'Succeeded') ?? 0));
    const pods = await sampler.stop();
    const boundAt = (name: string): number | undefined =>
      ['Scheduled', 'Running', 'Succeeded'].map((phase) => watch.seenAt(name, phase)).find((at) => at !== undefined);
    return {
      bindMs: names.map((name) => (boundAt(name) ?? Number.NaN) - (createdAt.get(name) ?? 0)),
      totalMs: lastEnd - startedAt,
      pods,
      failed: names.filter((name) => watch.seenAt(name, 'Succeeded') === undefined),
    };
  };

  const report = (label: string, result: BurstResult): void => {
    log(`${label}: ${String(TASKS)} tasks in ${(result.totalMs / 1000).toFixed(1)} s, ${String(result.failed.length)} not Succeeded`);
    log(`  time to bind: ${formatLatencies(summarizeLatencies(result.bindMs), 0)}`);
    log(`  Pods live/ready: ${result.pods.join(', ')}`);
  };

  const spec = (extra: Partial<RuntimeSpec>): Partial<RuntimeSpec> & Pick<RuntimeSpec, 'language'> => ({
    language: 'bash',
    runs: RUNS_PER_POD,
    drainSeconds: 10,
    ...extra,
  });

  log(
    `[elastic-pool bench] ${String(TASKS)} tasks 'sleep 2', ${String(MAX_PODS)} Pods x ${String(RUNS_PER_POD)} runs; load ${loadavg()[0]?.toFixed(1) ?? '?'}`,
  );
  await current.createRuntime('fixed', spec({ replicas: MAX_PODS }));
  await current.waitRuntimeReady('fixed', MAX_PODS);
  const fixed = await burst('fixed');
  report('fixed', fixed);
  const deleted = await clients.runtimes.delete(current.name, 'fixed');
  if (!deleted.ok && deleted.reason === 'Conflict') throw refusalError(deleted);
  await waitFor('the fixed Runtime’s Pods gone', async () => ((await podCounts('fixed')).live === 0 ? true : undefined), {
    timeoutMs: 120_000,
    intervalMs: 500,
  });

  log(
    `[elastic-pool bench] load ${loadavg()[0]?.toFixed(1) ?? '?'}; Pods run ${process.env.KRT_E2E_ENTRYPOINTS === 'bundle' ? 'the bundled builds (as the images ship them)' : 'the TypeScript sources'}`,
  );
  await current.createRuntime(
    'elastic',
    spec({ scaling: { minReplicas: 1, maxReplicas: MAX_PODS, scaleDownDelaySeconds: SCALE_DOWN_DELAY_SECONDS } }),
  );
  await current.waitRuntimeReady('elastic', 1);
  const elastic = await burst('elastic');
  report('elastic', elastic);
  const downFrom = performance.now();
  await waitFor(
    'the elastic pool back at 1 Pod',
    async () => {
      const runtime = await clients.runtimes.get(current.name, 'elastic');
      return runtime?.spec.replicas === 1 && (await podCounts('elastic')).live === 1 ? true : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  log(
    `  back to 1 Pod ${((performance.now() - downFrom) / 1000).toFixed(1)} s after the last task (scaleDownDelaySeconds ${String(SCALE_DOWN_DELAY_SECONDS)})`,
  );
  log(`ratio elastic/fixed: ${(elastic.totalMs / fixed.totalMs).toFixed(2)} (goal <= 1.5); load ${loadavg()[0]?.toFixed(1) ?? '?'}`);
  watch.stop();
} finally {
  await system?.stop();
  await controlPlane.stop();
}
