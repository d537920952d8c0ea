/**
 * Benchmark (not a test) of the scheduler's passes under a backlog, on a real control plane
 * (no kube-controller-manager, no node: the Runtime's Pod is a Pod object made Ready by hand):
 *   node tools/benchmarks/src/pass-bench.ts [runs=3000] [clients=8]
 * Two rounds, each with a fresh scheduler process (pass-probe-scheduler.ts) and `runs` Runs
 * created by `clients` concurrent creators while it runs:
 * - `suspended`: a Runtime with spec.suspend, so every Run waits RuntimeSuspended;
 * - `room for 4`: one ready Pod of 4 slots, so 4 Runs bind and the rest wait NoCapacity.
 * Per round: passes, pass duration p50/p99/max and their sum, the scheduler's CPU and event
 * loop delay, and kube-apiserver's Run status writes (every writer's: the scheduler is the
 * only one here). Every Run has a recorded creator (4 of them), so creators are reviewed.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { LABELS, RUN_REASONS } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { kruntimesClients } from '@kruntimes/run-client';
import { RUNTIME_COMPONENT } from '@kruntimes/runtime-workload';
import { forEachLimited } from '@kruntimes/host';
import {
  ADMIN_USER,
  Cluster,
  ControlPlane,
  REPO_ROOT,
  apiServerRequestDelta,
  apiServerRequests,
  formatLatencies,
  freePorts,
  kubeconfigYaml,
  summarizeLatencies,
  waitFor,
} from '@kruntimes/testing';

const RUNS = Number(process.argv[2] ?? 3000);
const CLIENTS = Number(process.argv[3] ?? 8);
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

interface Stats {
  passes: number[];
  cpuSeconds: number;
  rssMiB: number;
  loopDelayMs: { p99: number; max: number };
  metrics: string;
}

const controlPlane = await ControlPlane.start({
  crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')],
  controllerManager: false,
});
const stateDir = await mkdtemp(join(tmpdir(), 'pass-bench-'));
try {
  const cluster = new Cluster(controlPlane.info);
  const admin = cluster.kubeConfig();
  const clients = kruntimesClients(admin);
  const core = admin.makeApiClient(CoreV1Api);
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

  const round = async (label: string, suspend: boolean): Promise<void> => {
    const namespace = (await cluster.createNamespace({ prefix: 'pass-bench' })).name;
    const runtime: Runtime = {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Runtime',
      metadata: { name: 'rt' },
      spec: { language: 'python', replicas: 1, runs: 4, ...(suspend ? { suspend: true } : {}) },
    };
    if (!(await clients.runtimes.create(namespace, runtime)).ok) throw new Error('the Runtime exists already');
    if (!suspend) {
      // No kube-controller-manager makes the namespace's default ServiceAccount, which Pod admission requires.
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'default' } } });
      const pod = await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: 'rt-pod', labels: { [LABELS.component]: RUNTIME_COMPONENT, [LABELS.runtime]: 'rt' } },
          spec: { containers: [{ name: 'runtimed', image: 'none' }] },
        },
      });
      await core.replaceNamespacedPodStatus({
        namespace,
        name: 'rt-pod',
        body: {
          ...(pod.metadata === undefined ? {} : { metadata: pod.metadata }),
          ...(pod.spec === undefined ? {} : { spec: pod.spec }),
          status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] },
        },
      });
    }
    const [port = 0] = await freePorts(1);
    const logFile = join(stateDir, `${namespace}.log`);
    const fd = openSync(logFile, 'a');
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'tools/benchmarks/src/pass-probe-scheduler.ts'), kubeconfig, namespace, String(port)],
      {
        stdio: ['ignore', fd, fd],
      },
    );
    closeSync(fd);
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        resolve();
      }),
    );
    const stats = async (): Promise<Stats> => (await (await fetch(`http://127.0.0.1:${String(port)}/stats`)).json()) as Stats;
    try {
      await waitFor('the scheduler answers', () => stats().catch(() => undefined), { timeoutMs: 60_000, intervalMs: 200 });
      const before = await apiServerRequests(controlPlane.info);
      const started = performance.now();
      await forEachLimited(
        Array.from({ length: RUNS }, (_, i) => i),
        CLIENTS,
        async (i) => {
          const body: Run = {
            apiVersion: 'kruntimes.io/v1alpha1',
            kind: 'Run',
            metadata: { name: `r-${String(i).padStart(5, '0')}` },
            spec: {
              runtime: 'rt',
              source: { inline: 'print(1)\n' },
              mode: { task: {} },
              creator: { username: `user-${String(i % 4)}`, groups: ['system:masters'] },
            },
          };
          if (!(await clients.runs.create(namespace, body)).ok) throw new Error(`Run ${body.metadata.name ?? ''} exists already`);
        },
      );
      const created = performance.now();
      const expected = suspend ? RUN_REASONS.runtimeSuspended : RUN_REASONS.noCapacity;
      const waiting = suspend ? RUNS : RUNS - 4;
      await waitFor(
        `${String(waiting)} Runs waiting ${expected}`,
        async () => {
          const runs = await clients.runs.list(namespace);
          const count = runs.filter((run) => (run.status?.phase ?? 'Pending') === 'Pending' && run.status?.reason === expected).length;
          return count === waiting ? true : undefined;
        },
        { timeoutMs: 900_000, intervalMs: 3_000 },
      );
      const settled = performance.now();
      // Quiet: what a settled backlog costs (nothing, if nothing is polled).
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const requests = apiServerRequestDelta(before, await apiServerRequests(controlPlane.info));
      const s = await stats();
      const statusWrites = requests.byKind.find(([kind]) => kind === 'PUT runs/status')?.[1] ?? 0;
      const passSum = s.passes.reduce((a, b) => a + b, 0) / 1000;
      log(
        `${label}: ${String(RUNS)} Runs created in ${((created - started) / 1000).toFixed(1)} s, all waiting ${expected} after ${((settled - started) / 1000).toFixed(1)} s`,
      );
      log(`  passes ${String(s.passes.length)}: ${formatLatencies(summarizeLatencies(s.passes))}; sum ${passSum.toFixed(1)} s`);
      log(
        `  scheduler CPU ${s.cpuSeconds.toFixed(1)} s, RSS ${s.rssMiB.toFixed(0)} MiB, event loop delay p99 ${s.loopDelayMs.p99.toFixed(1)} ms max ${s.loopDelayMs.max.toFixed(1)} ms`,
      );
      log(
        `  Run status writes ${String(statusWrites)} (${(statusWrites / RUNS).toFixed(2)} per Run); all requests: ${requests.byKind
          .slice(0, 6)
          .map(([k, v]) => `${String(v)} ${k}`)
          .join(', ')}`,
      );
      const passLines = s.metrics.split('\n').filter((line) => line.startsWith('kruntimes_scheduler_pass_seconds_'));
      if (passLines.length > 0) log(`  ${passLines.filter((l) => !l.includes('bucket')).join('; ')}`);
    } finally {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      const errors = (await readFile(logFile, 'utf8')).split('\n').filter((line) => /"level":(50|60)/.test(line));
      if (errors.length > 0) log(`  scheduler errors: ${String(errors.length)}; first: ${errors[0] ?? ''}`);
    }
  };
  await round('suspended', true);
  await round('room for 4', false);
} finally {
  await controlPlane.stop();
  await rm(stateDir, { recursive: true, force: true });
}
