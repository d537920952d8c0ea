/**
 * Benchmark (not a test) of scheduling on a real control plane with local-node Pods:
 *   node apps/scheduler/bench/scheduling-bench.ts [runs=1000] [functionRuns=30]
 *
 * 1. Binding: `runs` Pending Runs on a Runtime of 4 Pods x 250 (Runtime Pods whose
 *    runtimed is a health-only stand-in, so that nothing but the scheduler works on the
 *    Runs). A backlog (all Runs exist, then the scheduler starts) with 1 and with 16 bind
 *    writes in flight (their ratio is the number that travels between machines), and a
 *    stream (the scheduler runs while the Runs are created, 20 creations in flight).
 * 2. create -> Ready of function Runs on warm Pods: the real runtimed and Python Runtime
 *    Server, controller-manager and scheduler; one Run at a time, each deleted (and gone)
 *    before the next, so every Run lands on a warm Pod with free capacity.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Run, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { ControllerManager } from '@kruntimes/controller-manager-core';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the benchmark runs Runtime Pods through the local node agent, like the integration tests
import { LocalNode } from '@kruntimes/local-node';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import type { RuntimeServerListenMode } from '@kruntimes/runtime-workload';
import { LATENCY_BUCKETS_SECONDS, Scheduler } from '@kruntimes/scheduler-core';
import { Cluster, ControlPlane, NamespaceAccess, REPO_ROOT, waitFor } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';

const RUNS = Number(process.argv[2] ?? 1000);
const FUNCTION_RUNS = Number(process.argv[3] ?? 30);
const WAIT = { timeoutMs: 180_000, intervalMs: 200 };
const errors: string[] = [];
const logger: ControllerLogger = {
  error: (object, message) => errors.push(`${message} ${JSON.stringify(object)}`),
  debug: () => undefined,
};

const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
const stateDir = await mkdtemp(join(tmpdir(), 'scheduling-bench-'));
const cleanup: (() => Promise<void>)[] = [];
try {
  const cluster = new Cluster(controlPlane.info);
  const admin = cluster.kubeConfig();
  const objects = admin.makeApiClient(CustomObjectsApi);
  const core = admin.makeApiClient(CoreV1Api);
  const bindNs = (await cluster.createNamespace({ prefix: 'bench-bind', waitForDefaultServiceAccount: true })).name;
  const fnNs = (await cluster.createNamespace({ prefix: 'bench-fn', waitForDefaultServiceAccount: true })).name;
  await new NamespaceAccess(cluster, fnNs).grantServiceAccount('default', 'runtimed', RUNTIMED_ROLE_RULES);

  const node = new LocalNode(
    admin,
    {
      nodeName: 'bench',
      stateDir,
      namespaces: [bindNs, fnNs],
      images: {
        'kruntimes/fake-runtimed': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/scheduler/test/fixtures/fake-runtimed.ts')] },
        'kruntimes/runtimed': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtimed/src/main.ts')] },
        'kruntimes/runtime-server-python': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')] },
      },
    },
    { deleteNodeOnStop: true },
  );
  await node.start();
  cleanup.push(() => node.stop({ graceMs: 2_000 }));

  const internalCa = await createCertificateAuthority();
  const manager = (namespace: string, runtimedImage: string): ControllerManager => {
    const listen: RuntimeServerListenMode = 'podIP';
    return new ControllerManager({
      kubeConfig: admin,
      internalCa,
      namespace,
      logger,
      workload: {
        runtimedImage,
        runtimeServerImages: { python: 'kruntimes/runtime-server-python:dev', bash: 'kruntimes/runtime-server-bash:dev' },
        serviceAccountName: 'default',
        runtimeServerListen: listen,
        terminationGracePeriodSeconds: 2,
      },
    });
  };
  const createRuntime = async (namespace: string, name: string, spec: Partial<RuntimeSpec>): Promise<void> => {
    const body: Runtime = {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Runtime',
      metadata: { name },
      spec: { language: 'python', ...spec },
    };
    await objects.createNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural: RUNTIME_PLURAL, body });
  };
  const readyPods = (namespace: string, runtime: string, count: number): Promise<true> =>
    waitFor(
      `${count} ready Pods of ${runtime}`,
      async () => {
        const pods = (await core.listNamespacedPod({ namespace, labelSelector: podLabelSelector(runtime) })).items;
        return pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod)).length === count ? true : undefined;
      },
      WAIT,
    );
  const createRun = async (namespace: string, name: string, runtime: string, fn: boolean): Promise<void> => {
    const body: Run = {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name },
      spec: fn
        ? { runtime, source: { inline: 'def handle(event, context):\n    return event\n' }, mode: { function: { handler: 'main:handle' } } }
        : { runtime, source: { inline: 'print(1)' }, mode: { task: {} } },
    };
    await objects.createNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural: RUN_PLURAL, body });
  };

  // ------------------------------------------------------------------ 1. binding
  const bindManager = manager(bindNs, 'kruntimes/fake-runtimed:dev');
  await bindManager.start();
  cleanup.push(() => bindManager.stop());
  await createRuntime(bindNs, 'bind', { replicas: 4, runs: 250 });
  await readyPods(bindNs, 'bind', 4);

  const bindRound = async (label: string, schedulerFirst: boolean, bindConcurrency: number): Promise<number> => {
    const names = Array.from({ length: RUNS }, (_, i) => `${label}-${String(i).padStart(4, '0')}`);
    const watcher = await watchPhases(admin, bindNs);
    const scheduler = new Scheduler({ kubeConfig: admin, namespace: bindNs, logger, bindConcurrency });
    let started = performance.now();
    if (schedulerFirst) await scheduler.start();
    started = schedulerFirst ? performance.now() : started;
    await forEachLimited(names, 20, (name) => createRun(bindNs, name, 'bind', false));
    const created = performance.now();
    if (!schedulerFirst) {
      started = performance.now();
      await scheduler.start();
    }
    await watcher.until(() => names.every((name) => watcher.phase.get(name) === 'Scheduled'), WAIT.timeoutMs);
    const done = performance.now();
    watcher.stop();
    const seconds = (done - started) / 1000;
    const m = scheduler.metrics;
    log(
      `bind ${label} (${bindConcurrency} writes in flight): ${RUNS} Runs bound in ${seconds.toFixed(2)} s (${(RUNS / seconds).toFixed(0)} Runs/s)` +
        (schedulerFirst ? `, creating them took ${((created - started) / 1000).toFixed(2)} s` : '') +
        `; bind writes p50 ${quantile(m.bindWrite, 0.5)} p99 ${quantile(m.bindWrite, 0.99)}; conflicts ${m.bindConflicts}`,
    );
    await scheduler.stop();
    await objects.deleteCollectionNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: bindNs, plural: RUN_PLURAL });
    await waitFor(
      'Runs deleted',
      async () =>
        (
          (await objects.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: bindNs, plural: RUN_PLURAL })) as {
            items: unknown[];
          }
        ).items.length === 0
          ? true
          : undefined,
      WAIT,
    );
    return RUNS / seconds;
  };
  const serial = await bindRound('backlog', false, 1);
  const parallel = await bindRound('backlog', false, 16);
  await bindRound('stream', true, 16);
  log(`bind throughput ratio, 16 writes in flight / 1: ${(parallel / serial).toFixed(2)}`);
  await bindManager.stop();
  cleanup.pop();

  // ------------------------------------------------------------------ 2. create -> Ready on warm Pods
  const fnManager = manager(fnNs, 'kruntimes/runtimed:dev');
  await fnManager.start();
  cleanup.push(() => fnManager.stop());
  const fnScheduler = new Scheduler({ kubeConfig: admin, namespace: fnNs, logger });
  await fnScheduler.start();
  cleanup.push(() => fnScheduler.stop());
  await createRuntime(fnNs, 'py', { replicas: 2, runs: 4 });
  await readyPods(fnNs, 'py', 2);
  const watcher = await watchPhases(admin, fnNs);
  cleanup.push(() => {
    watcher.stop();
    return Promise.resolve();
  });
  const latencies: number[] = [];
  for (let i = 0; i < FUNCTION_RUNS; i += 1) {
    const name = `fn-${String(i).padStart(3, '0')}`;
    const started = performance.now();
    await createRun(fnNs, name, 'py', true);
    await watcher.until(() => watcher.phase.get(name) === 'Ready', 60_000);
    latencies.push((watcher.seenAt.get(`${name}:Ready`) ?? Number.NaN) - started);
    await objects.deleteNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: fnNs, plural: RUN_PLURAL, name });
    await watcher.until(() => !watcher.phase.has(name), 60_000);
  }
  latencies.sort((a, b) => a - b);
  const at = (q: number): string =>
    `${(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN).toFixed(0)} ms`;
  log(`function create -> Ready on warm Pods (${FUNCTION_RUNS} Runs, one at a time): p50 ${at(0.5)}, p99 ${at(0.99)}, max ${at(1)}`);
  if (errors.length > 0) log(`errors logged by controllers: ${errors.length}\n${errors.slice(0, 5).join('\n')}`);
} finally {
  for (const step of cleanup.reverse())
    await step().catch((error: unknown) => {
      log(`cleanup failed: ${String(error)}`);
    });
  await controlPlane.stop();
  await rm(stateDir, { recursive: true, force: true });
}

/** The newest phase of every Run of a namespace, and when each (name, phase) was first seen. */
async function watchPhases(
  kubeConfig: KubeConfig,
  namespace: string,
): Promise<{
  phase: Map<string, string>;
  seenAt: Map<string, number>;
  until: (predicate: () => boolean, timeoutMs: number) => Promise<void>;
  stop: () => void;
}> {
  const phase = new Map<string, string>();
  const seenAt = new Map<string, number>();
  let wake: () => void = () => undefined;
  let stopped = false;
  const request = await new Watch(kubeConfig).watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace}/${RUN_PLURAL}`,
    {},
    (type: string, run: Run) => {
      const name = run.metadata.name ?? '';
      if (type === 'DELETED') phase.delete(name);
      else {
        const current = run.status?.phase ?? 'Pending';
        phase.set(name, current);
        if (!seenAt.has(`${name}:${current}`)) seenAt.set(`${name}:${current}`, performance.now());
      }
      wake();
    },
    (error: unknown) => {
      // stop() aborts the request, which reports an AbortError here: not a failure.
      if (!stopped && error !== undefined && error !== null)
        errors.push(`watch: ${error instanceof Error ? error.message : JSON.stringify(error)}`);
    },
  );
  return {
    phase,
    seenAt,
    until: (predicate, timeoutMs) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        const check = (): void => {
          if (predicate()) {
            clearTimeout(timer);
            resolve();
          }
        };
        wake = check;
        check();
      }),
    stop: () => {
      stopped = true;
      request.abort();
    },
  };
}

function quantile(histogram: Scheduler['metrics']['bindWrite'], q: number): string {
  const target = histogram.count * q;
  const index = histogram.counts.findIndex((count) => count >= target);
  return index < 0 ? '> 60 s' : `<= ${(LATENCY_BUCKETS_SECONDS[index] ?? 0) * 1000} ms`;
}

async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const item = items[next] as T;
        next += 1;
        await work(item);
      }
    }),
  );
}
