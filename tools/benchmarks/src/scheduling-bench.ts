/**
 * Benchmark (not a test) of scheduling on a real control plane with local-node Pods:
 *   node tools/benchmarks/src/scheduling-bench.ts [runs=1000] [functionRuns=30]
 * BENCH_CPU_PROF=DIR runs every scheduler process under `node --cpu-prof` into DIR, and runtimed
 * (part 2) into DIR/runtimed.
 *
 * The scheduler always runs as its own process, as deployed (apps/scheduler/src/main.ts,
 * with its leader Lease); the bench process only creates Runs and watches them, and
 * every time below is the bench's `performance.now()` at the watch event that first
 * showed a phase.
 *
 * 1. Binding: `runs` Pending Runs on a Runtime of 4 Pods x 250 (Runtime Pods whose
 *    runtimed is a health-only stand-in, so that nothing but the scheduler works on the
 *    Runs). A backlog (all Runs exist, then the scheduler starts; the rate is taken from
 *    the first bind to the last, so process start and cache fill are not in it) with
 *    the default 16 and with 1 bind write in flight (the serial scheduler runs
 *    scheduler-process.ts, main.ts's wiring with a bind concurrency), after a warm-up
 *    round and in the order 1, 16, 16, 1; and a stream (the scheduler runs while the
 *    Runs are created, 20 creations in flight). Beside each: kube-apiserver's own
 *    request count and rate over the round.
 * 2. On warm Pods (the real runtimed and Python Runtime Server, controller-manager,
 *    scheduler): create -> Ready of function Runs and create -> Succeeded of Python task
 *    Runs `print(1)`, alternated, one Run at a time, each deleted (and gone) before the
 *    next, after 3 uncounted ones of each; with the split by phase.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { Run, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { ControllerManager } from '@kruntimes/controller-manager-core';
import { LocalNode } from '@kruntimes/local-node';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import type { RuntimeServerListenMode } from '@kruntimes/runtime-workload';
import { LATENCY_BUCKETS_SECONDS } from '@kruntimes/scheduler-core';
import { forEachLimited } from '@kruntimes/host';
import { kruntimesClients, refusalError } from '@kruntimes/run-client';
import {
  ADMIN_USER,
  Cluster,
  ControlPlane,
  NamespaceAccess,
  REPO_ROOT,
  RunPhaseWatch,
  apiServerPid,
  apiServerRequestDelta,
  apiServerRequests,
  formatApiServerRequestDelta,
  formatLatencies,
  freePorts,
  kubeconfigYaml,
  processCpuSeconds,
  summarizeLatencies,
  waitFor,
} from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';

const RUNS = Number(process.argv[2] ?? 1000);
const FUNCTION_RUNS = Number(process.argv[3] ?? 30);
const WARMUP_RUNS = 3;
const WAIT = { timeoutMs: 180_000, intervalMs: 200 };
const CPU_PROF = process.env.BENCH_CPU_PROF;
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
  const clients = kruntimesClients(admin);
  const core = admin.makeApiClient(CoreV1Api);
  const bindNs = (await cluster.createNamespace({ prefix: 'bench-bind', waitForDefaultServiceAccount: true })).name;
  const fnNs = (await cluster.createNamespace({ prefix: 'bench-fn', waitForDefaultServiceAccount: true })).name;
  await new NamespaceAccess(cluster, fnNs).grantServiceAccount('default', 'runtimed', RUNTIMED_ROLE_RULES);
  const kubeconfig = join(stateDir, 'scheduler.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({
      server: controlPlane.info.server,
      caPem: controlPlane.info.caPem,
      user: ADMIN_USER,
      token: cluster.user(ADMIN_USER).token,
    }),
    { mode: 0o600 },
  );
  if (CPU_PROF !== undefined) await mkdir(CPU_PROF, { recursive: true });

  const node = new LocalNode(
    admin,
    {
      nodeName: 'bench',
      stateDir,
      namespaces: [bindNs, fnNs],
      images: {
        'kruntimes/fake-runtimed': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/scheduler/test/fixtures/fake-runtimed.ts')] },
        'kruntimes/runtimed': {
          entrypoint: [
            process.execPath,
            ...(CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(CPU_PROF, 'runtimed')}`]),
            join(REPO_ROOT, 'apps/runtimed/src/main.ts'),
          ],
        },
        'kruntimes/runtime-server-python': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')] },
      },
      kubeletServer: cluster.info.kubeletServer,
    },
    { deleteNodeOnStop: true },
  );
  await node.start();
  cleanup.push(() => node.stop({ graceMs: 2_000 }));

  let schedulers = 0;
  /**
   * A scheduler process in `namespace`: main.ts (its own Lease, fresh per process so that
   * no process waits out the previous one's), or with `bindConcurrency` the bench's
   * scheduler-process.ts. Its log goes to the state directory; errors are counted there.
   */
  const startScheduler = async (namespace: string, bindConcurrency?: number) => {
    schedulers += 1;
    const [port = 0] = await freePorts(1);
    const logFile = join(stateDir, `scheduler-${String(schedulers)}.log`);
    const script =
      bindConcurrency === undefined
        ? [
            join(REPO_ROOT, 'apps/scheduler/src/main.ts'),
            ...['--kubeconfig', kubeconfig, '--namespace', namespace, '--lease-namespace', namespace],
            ...['--lease-name', `bench-scheduler-${String(schedulers)}`, '--metrics-address', `127.0.0.1:${String(port)}`],
            ...['--log-level', 'warn'],
          ]
        : [join(REPO_ROOT, 'tools/benchmarks/src/scheduler-process.ts'), kubeconfig, namespace, String(port), String(bindConcurrency)];
    const fd = openSync(logFile, 'a');
    const child = spawn(process.execPath, [...(CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`]), ...script], {
      env: { ...process.env, POD_NAME: `bench-scheduler-${String(schedulers)}`, KRT_LOG_LEVEL: 'warn' },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    const stop = async (): Promise<void> => {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      const lines = (await readFile(logFile, 'utf8')).split('\n').filter((line) => /"level":(50|60)/.test(line));
      errors.push(...lines.map((line) => `scheduler: ${line}`));
    };
    cleanup.push(stop);
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
    return {
      started: performance.now(),
      cpuSeconds: () => processCpuSeconds(child.pid ?? 0),
      metrics,
      stop: async () => {
        cleanup.splice(cleanup.indexOf(stop), 1);
        await stop();
      },
    };
  };

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
    const created = await clients.runtimes.create(namespace, body);
    if (!created.ok) throw refusalError(created);
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
        : { runtime, source: { inline: 'print(1)\n' }, mode: { task: {} } },
    };
    const created = await clients.runs.create(namespace, body);
    if (!created.ok) throw refusalError(created);
  };
  const deleteRun = async (namespace: string, name: string): Promise<void> => {
    const deleted = await clients.runs.delete(namespace, name);
    if (!deleted.ok && deleted.reason === 'Conflict') throw refusalError(deleted);
  };

  // ------------------------------------------------------------------ 1. binding
  const bindManager = manager(bindNs, 'kruntimes/fake-runtimed:dev');
  await bindManager.start();
  const stopBindManager = () => bindManager.stop();
  cleanup.push(stopBindManager);
  await createRuntime(bindNs, 'bind', { replicas: 4, runs: 250 });
  await readyPods(bindNs, 'bind', 4);
  const watch = await RunPhaseWatch.start(admin, bindNs);
  cleanup.push(() => {
    watch.stop();
    return Promise.resolve();
  });

  const apiPid = await apiServerPid(controlPlane.info);
  const apiCpu = async (): Promise<number> => (apiPid === undefined ? Number.NaN : processCpuSeconds(apiPid));
  let rounds = 0;
  /** One round; returns its Runs/s (undefined for the warm-up, which prints nothing). */
  const bindRound = async (mode: 'backlog' | 'stream' | 'warm-up', bindConcurrency?: number): Promise<number> => {
    rounds += 1;
    const restartsBefore = watch.restarts;
    const count = mode === 'warm-up' ? Math.ceil(RUNS / 4) : RUNS;
    const names = Array.from({ length: count }, (_, i) => `r${String(rounds)}-${String(i).padStart(4, '0')}`);
    const stream = mode === 'stream';
    let scheduler = stream ? await startScheduler(bindNs, bindConcurrency) : undefined;
    if (stream) {
      // The scheduler leads and places before the clock starts: one Run bound and deleted.
      const probe = `r${String(rounds)}-probe`;
      await createRun(bindNs, probe, 'bind', false);
      await watch.untilSeen(probe, 'Scheduled', WAIT.timeoutMs);
      await deleteRun(bindNs, probe);
      await watch.untilGone(probe, WAIT.timeoutMs);
    }
    const requestsBefore = stream ? await apiServerRequests(controlPlane.info) : undefined;
    const apiCpuBefore = stream ? await apiCpu() : undefined;
    const createStart = performance.now();
    await forEachLimited(names, 20, (name) => createRun(bindNs, name, 'bind', false));
    const created = performance.now();
    const before = requestsBefore ?? (await apiServerRequests(controlPlane.info));
    const apiCpuStart = apiCpuBefore ?? (await apiCpu());
    const readAt = stream ? createStart : performance.now();
    scheduler ??= await startScheduler(bindNs, bindConcurrency);
    await watch.until(() => names.every((name) => watch.seenAt(name, 'Scheduled') !== undefined), WAIT.timeoutMs, `${mode} round bound`);
    const requests = apiServerRequestDelta(before, await apiServerRequests(controlPlane.info));
    const apiCpuSeconds = (await apiCpu()) - apiCpuStart;
    const schedulerCpuSeconds = await scheduler.cpuSeconds();
    const requestSeconds = (performance.now() - readAt) / 1000;
    const bound = names.map((name) => watch.seenAt(name, 'Scheduled') ?? Number.NaN);
    const first = Math.min(...bound);
    const last = Math.max(...bound);
    const exposition = await scheduler.metrics();
    await scheduler.stop();
    const seconds = stream ? (last - createStart) / 1000 : (last - first) / 1000;
    const rate = (stream ? count : count - 1) / seconds;
    if (mode !== 'warm-up') {
      const label = `bind ${mode} (${bindConcurrency === undefined ? '16 (default)' : String(bindConcurrency)} writes in flight)`;
      log(
        `${label}: ${String(count)} Runs in ${seconds.toFixed(2)} s = ${rate.toFixed(0)} Runs/s` +
          (stream
            ? `, from the first create (creating them took ${((created - createStart) / 1000).toFixed(2)} s)`
            : `, first bind to last (process start to first bind ${((first - scheduler.started) / 1000).toFixed(2)} s)`) +
          `; bind writes ${bucketQuantile(exposition, 'kruntimes_scheduler_bind_write_seconds', 0.5, 'p50')}, ` +
          `${bucketQuantile(exposition, 'kruntimes_scheduler_bind_write_seconds', 0.99, 'p99')}; conflicts ${metricValue(exposition, 'kruntimes_scheduler_bind_conflicts_total')}`,
      );
      log(
        `  kube-apiserver over the round (${requestSeconds.toFixed(2)} s): ${(requests.total / requestSeconds).toFixed(0)} requests/s, ` +
          formatApiServerRequestDelta(requests),
      );
      log(
        `  CPU: kube-apiserver ${apiCpuSeconds.toFixed(2)} s over the round (${((apiCpuSeconds / requestSeconds) * 100).toFixed(0)}% of a core), ` +
          `scheduler process ${schedulerCpuSeconds.toFixed(2)} s from its start (${((schedulerCpuSeconds * 1000) / count).toFixed(2)} ms per Run)`,
      );
      if (watch.restarts > restartsBefore)
        log(`  (the bench's watch was resumed ${String(watch.restarts - restartsBefore)} times: times in the gaps are late)`);
    }
    await forEachLimited(names, 20, (name) => deleteRun(bindNs, name));
    await watch.until(() => names.every((name) => !watch.has(name)), WAIT.timeoutMs, 'Runs deleted');
    return rate;
  };
  await bindRound('warm-up');
  const serial1 = await bindRound('backlog', 1);
  const parallel1 = await bindRound('backlog');
  const parallel2 = await bindRound('backlog');
  const serial2 = await bindRound('backlog', 1);
  await bindRound('stream');
  log(
    `bind throughput ratio, 16 writes in flight / 1 (means of two rounds each): ${((parallel1 + parallel2) / (serial1 + serial2)).toFixed(2)}`,
  );
  cleanup.splice(cleanup.indexOf(stopBindManager), 1);
  await stopBindManager();

  // ------------------------------------------------------------------ 2. create -> Ready / Succeeded on warm Pods
  const fnManager = manager(fnNs, 'kruntimes/runtimed:dev');
  await fnManager.start();
  cleanup.push(() => fnManager.stop());
  const fnScheduler = await startScheduler(fnNs);
  await createRuntime(fnNs, 'py', { replicas: 2, runs: 4 });
  await readyPods(fnNs, 'py', 2);
  const runs = await RunPhaseWatch.start(admin, fnNs);
  cleanup.push(() => {
    runs.stop();
    return Promise.resolve();
  });
  const PHASES = {
    function: ['Pending', 'Scheduled', 'Running', 'Ready'],
    task: ['Pending', 'Scheduled', 'Running', 'Succeeded'],
  } as const;
  /** create -> each phase's first sight, per kind; the first WARMUP_RUNS of each kind are dropped. */
  const samples = { function: [] as number[][], task: [] as number[][] };
  for (let i = 0; i < WARMUP_RUNS + FUNCTION_RUNS; i += 1) {
    for (const kind of ['function', 'task'] as const) {
      const name = `${kind === 'function' ? 'fn' : 'task'}-${String(i).padStart(3, '0')}`;
      const phases = PHASES[kind];
      const started = performance.now();
      await createRun(fnNs, name, 'py', kind === 'function');
      await runs.untilSeen(name, phases[phases.length - 1] ?? '');
      if (i >= WARMUP_RUNS) samples[kind].push(phases.map((phase) => (runs.seenAt(name, phase) ?? Number.NaN) - started));
      await deleteRun(fnNs, name);
      await runs.untilGone(name);
    }
  }
  for (const kind of ['function', 'task'] as const) {
    const phases = PHASES[kind];
    const rows = samples[kind];
    const what = kind === 'function' ? 'function create -> Ready' : 'Python task print(1) create -> Succeeded';
    log(
      `${what} on warm Pods (one at a time): ${formatLatencies(summarizeLatencies(rows.map((row) => row[row.length - 1] ?? Number.NaN)), 1)}`,
    );
    phases.forEach((phase, p) => {
      const from = p === 0 ? 'create' : (phases[p - 1] ?? '');
      const split = rows.map((row) => (row[p] ?? Number.NaN) - (p === 0 ? 0 : (row[p - 1] ?? Number.NaN)));
      log(`  ${from} -> ${phase}: ${formatLatencies(summarizeLatencies(split), 1)}`);
    });
  }
  await fnScheduler.stop();
  if (watch.errors.length + runs.errors.length > 0) errors.push(...watch.errors, ...runs.errors);
  if (errors.length > 0) log(`errors logged by controllers: ${String(errors.length)}\n${errors.slice(0, 5).join('\n')}`);
} finally {
  for (const step of cleanup.reverse())
    await step().catch((error: unknown) => {
      log(`cleanup failed: ${String(error)}`);
    });
  await controlPlane.stop();
  await rm(stateDir, { recursive: true, force: true });
}

/** The first histogram bucket bound at or above quantile `q` of a Prometheus histogram in `exposition`. */
function bucketQuantile(exposition: string, name: string, q: number, label: string): string {
  const count = metricValue(exposition, `${name}_count`);
  const target = Math.ceil(count * q);
  for (const bound of LATENCY_BUCKETS_SECONDS) {
    if (metricValue(exposition, `${name}_bucket{le="${String(bound)}"}`) >= target) return `${label} <= ${String(bound * 1000)} ms`;
  }
  return `${label} > ${String((LATENCY_BUCKETS_SECONDS.at(-1) ?? 0) * 1000)} ms`;
}

function metricValue(exposition: string, series: string): number {
  const line = exposition.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}
