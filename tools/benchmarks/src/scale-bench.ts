/**
 * Benchmark (not a test) of the control plane with tens of thousands of Runs in one
 * namespace:
 *   node tools/benchmarks/src/scale-bench.ts [POINTS]        (npx nx run benchmarks:scale)
 * POINTS: Run counts, comma-separated, default 1000,10000,50000 (or env KRT_SCALE_POINTS);
 * KRT_SCALE_BACKLOG: Runs of the bind-rate backlog (default 10000); KRT_SCALE_CONCURRENCY:
 * creations in flight (default 12); KRT_SCALE_MEMORY_LIMIT_MIB: the container memory limit each
 * service's V8 heap is sized for, as the chart sizes it (default 1024). Figures are printed, never asserted: the exit code says
 * only whether the bench itself ran.
 *
 * The control plane is real: etcd, kube-apiserver (the chart's CRDs and admission
 * policies, so every Run records its creator and the scheduler reviews it),
 * kube-controller-manager; scheduler, controller-manager, stale-recovery and
 * runtime-gateway each run as their own process from apps/<name>/src/main.ts as the
 * chart runs them: every namespace watched, leader election with the default lease
 * timings (Leases in a system namespace), --metrics-address and (the controllers)
 * --health-address on free loopback ports, info logs to files, the admin's kubeconfig.
 * Runtime Pods run on a local node in this process (tools/local-node); their runtimed is
 * scale-runtimed.ts: the real runtimed in the one Pod of Runtime `real` (measured), a
 * health-only stand-in everywhere else (nothing executes).
 *
 * The Runs, all in one namespace, created by the admin with CONCURRENCY creations in
 * flight, in turn one of each kind (each with ttlSecondsAfterFinished one day):
 * - `held-N`: Pending on Runtime `held` (spec.suspend: true, no Pods);
 * - `queued-N`: Pending on Runtime `room` (4 stand-in Pods x 250 Runs): the scheduler
 *   binds the first 1,000, which are never claimed; the rest wait for room;
 * - `done-N`: finished Runs awaiting their TTL. The bench plays their executor: created on
 *   Runtime `history` (suspended, so the scheduler leaves them alone, one stand-in Pod),
 *   then Bind to that Pod (as the scheduler), Claim and Succeeded (as runtimed), each a
 *   writeTransition of @kruntimes/run-client (the fenced status writer, the run-state
 *   machine). The controller-manager runs with --finished-runs-per-runtime 1000000 so its
 *   history GC keeps them; only their TTL would remove them.
 * Points are cumulative: each adds Runs up to its count, waits until the scheduler bound
 * what fits into `room` and the API server's write rate fell (at most 180 s), then reads
 * resident memory (VmRSS) and live heap (kruntimes_process_heap_live_bytes, n/a when a
 * service does not export it) of every service, runtimed, kube-apiserver and etcd.
 * KiB per Run = (resident now - resident before the first Run) / Runs. API requests/s are
 * kube-apiserver's own counters over the creation and over the last quiet 5 s; scheduler
 * pass duration (kruntimes_scheduler_pass_seconds) and lease renew latency
 * (kruntimes_leader_renew_seconds) are quantiles of the histogram increase over the point.
 *
 * At the last point each controller is stopped (SIGTERM) and started again; synced = its
 * /readyz answers 200 "informers synced; running" (a standby's 200 does not count).
 * Then the bind rate with a backlog: BACKLOG Runs on Runtime `backlog` (4 stand-in Pods x
 * 250, created suspended), the writes settled, then the Runtime resumed (suspend: false);
 * binds/s = from the first bind to the 1,000th, when its room is full.
 * The Leases are read every 2 s throughout: a controller kept its lease when the holder
 * stayed its process (identity POD_NAME_uuid) and leaseTransitions did not move, except
 * across the restarts the bench made; a process exit the bench did not ask for is a loss.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import type { Run, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { LocalNode } from '@kruntimes/local-node';
import { kruntimesClients, writeTransition } from '@kruntimes/run-client';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { nodeHeapOptions, podLabelSelector } from '@kruntimes/runtime-workload';
import { forEachLimited } from '@kruntimes/host';
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
  call,
  freePorts,
  processCpuSeconds,
  kubeconfigYaml,
  testCa,
  testServerCert,
  waitFor,
} from '@kruntimes/testing';
import type { ApiServerRequests } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';

const POINTS = (process.argv[2] ?? process.env.KRT_SCALE_POINTS ?? '1000,10000,50000')
  .split(',')
  .map((text) => Number(text.trim()))
  .filter((n) => Number.isInteger(n) && n > 0)
  .sort((a, b) => a - b);
const BACKLOG = Number(process.env.KRT_SCALE_BACKLOG ?? 10_000);
const CONCURRENCY = Number(process.env.KRT_SCALE_CONCURRENCY ?? 12);
const ROOM = 1000;
const RESTART_GOAL_AT = 50_000;
const GOALS = { kibPerRun: 4, bindsPerSecond: 200, syncedSeconds: 30 };
/** The heap in use after the last full collection: live data, not the garbage V8 has yet to collect. */
const HEAP_METRIC = 'kruntimes_process_heap_live_bytes';
/**
 * Each service's V8 heap flags, as the chart derives them from a container memory limit
 * (nodeHeapOptions): deployed, V8 sizes its heap against the limit; uncapped on this 24 GiB
 * host it would let garbage pile up and resident memory would say little about the data.
 */
const MEMORY_LIMIT_MIB = Number(process.env.KRT_SCALE_MEMORY_LIMIT_MIB ?? 1024);
const PASS_METRIC = 'kruntimes_scheduler_pass_seconds';
const RENEW_METRIC = 'kruntimes_leader_renew_seconds';
const TTL_SECONDS = 86_400;
const MAX_AUTOMATIC_RESTARTS = 10;
const REAL_RUNTIME = 'real';
const KINDS = [
  { kind: 'held', runtime: 'held' },
  { kind: 'queued', runtime: 'room' },
  { kind: 'done', runtime: 'history' },
] as const;
type Kind = (typeof KINDS)[number]['kind'];
const CONTROLLERS = ['scheduler', 'controller-manager', 'stale-recovery'] as const;
type ControllerName = (typeof CONTROLLERS)[number];
const SERVICES = [...CONTROLLERS, 'runtime-gateway'] as const;
type ServiceName = (typeof SERVICES)[number];
const MEASURED = [...SERVICES, 'runtimed', 'kube-apiserver', 'etcd'] as const;
type Measured = (typeof MEASURED)[number];
const LEASES: Record<ControllerName, string> = {
  scheduler: 'kruntimes-scheduler',
  'controller-manager': 'kruntimes-controller-manager',
  'stale-recovery': 'kruntimes-stale-recovery',
};

if (POINTS.length === 0 || !(BACKLOG >= 0) || !(CONCURRENCY >= 1))
  throw new Error('POINTS, KRT_SCALE_BACKLOG or KRT_SCALE_CONCURRENCY is not valid');

const benchStart = performance.now();
const log = (line: string): void => {
  process.stdout.write(`[${((performance.now() - benchStart) / 1000).toFixed(0).padStart(5)} s] ${line}\n`);
};

// ------------------------------------------------------------------ cleanup, also on a signal
const cleanup: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
const runCleanup = (): Promise<void> => {
  cleaning ??= (async () => {
    for (const step of cleanup.reverse())
      await step().catch((error: unknown) => {
        log(`cleanup step failed: ${String(error)}`);
      });
  })();
  return cleaning;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void runCleanup().finally(() => process.exit(130));
  });

// ------------------------------------------------------------------ one service process
class ServiceProcess {
  generation = 0;
  readonly unexpectedExits: string[] = [];
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #stopping = false;

  readonly name: ServiceName;
  readonly logFile: string;
  readonly metricsPort: number;
  readonly healthPort: number | undefined;
  readonly args: readonly string[];

  constructor(name: ServiceName, logFile: string, metricsPort: number, healthPort: number | undefined, args: readonly string[]) {
    this.name = name;
    this.logFile = logFile;
    this.metricsPort = metricsPort;
    this.healthPort = healthPort;
    this.args = args;
  }

  /** POD_NAME of the current process: the first part of its Lease identity. */
  get podName(): string {
    return `${this.name}-${String(this.generation)}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): void {
    this.generation += 1;
    this.#stopping = false;
    const fd = openSync(this.logFile, 'a');
    const child = spawn(process.execPath, [join(REPO_ROOT, 'apps', this.name, 'src/main.ts'), ...this.args], {
      env: { ...process.env, POD_NAME: this.podName, NODE_OPTIONS: nodeHeapOptions(MEMORY_LIMIT_MIB * 2 ** 20) },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.#child = child;
    const podName = this.podName;
    this.#exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        resolve();
        if (this.#stopping || cleaning !== undefined) return;
        this.unexpectedExits.push(`${podName} exited (${String(code ?? signal)})`);
        // Started again, as its Deployment would, so that the bench goes on measuring; a bounded number of times.
        const again = this.unexpectedExits.length <= MAX_AUTOMATIC_RESTARTS;
        log(`!! ${podName} exited on its own (${String(code ?? signal)}; see ${this.logFile})${again ? '; starting it again' : ''}`);
        if (again)
          setTimeout(() => {
            if (cleaning === undefined && !this.#stopping) this.start();
          }, 1_000);
      });
    });
  }

  /** SIGTERM, SIGKILL after `graceMs`; resolves once it exited. */
  async stop(graceMs = 20_000): Promise<void> {
    const child = this.#child;
    if (child?.exitCode !== null || child.signalCode !== null) return;
    this.#stopping = true;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await this.#exited;
    clearTimeout(timer);
  }

  async metrics(): Promise<string | undefined> {
    return scrape(`http://127.0.0.1:${String(this.metricsPort)}/metrics`);
  }

  /** Leading with its informers synced (a standby's 200 does not count). */
  async synced(): Promise<boolean> {
    if (this.healthPort === undefined) return false;
    try {
      const answer = await fetch(`http://127.0.0.1:${String(this.healthPort)}/readyz`, { signal: AbortSignal.timeout(5_000) });
      return answer.status === 200 && (await answer.text()).includes('running');
    } catch {
      return false;
    }
  }
}

// ------------------------------------------------------------------ measurements
async function scrape(url: string): Promise<string | undefined> {
  try {
    const answer = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    return answer.ok ? await answer.text() : undefined;
  } catch {
    return undefined;
  }
}

async function rssKiB(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  const status = await readFile(`/proc/${String(pid)}/status`, 'utf8').catch(() => '');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return match === null ? undefined : Number(match[1]);
}

/** The sum over label sets of a gauge or counter; undefined when the exposition has no such series. */
function metricSum(exposition: string | undefined, name: string): number | undefined {
  if (exposition === undefined) return undefined;
  let sum: number | undefined;
  for (const line of exposition.split('\n')) {
    if (!(line.startsWith(`${name} `) || line.startsWith(`${name}{`))) continue;
    sum = (sum ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** A histogram's cumulative buckets (summed over the other labels), by upper bound. */
function histogramBuckets(exposition: string | undefined, name: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const line of exposition?.split('\n') ?? []) {
    if (!line.startsWith(`${name}_bucket{`)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    if (le === undefined) continue;
    const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return buckets;
}

/**
 * Quantile `q` of what a histogram observed between two scrapes (all of `after` when the
 * process restarted in between), interpolated within its bucket as Prometheus'
 * histogram_quantile does; undefined without the metric or without observations.
 */
function histogramQuantile(before: string | undefined, after: string | undefined, name: string, q: number): number | undefined {
  const end = histogramBuckets(after, name);
  if (end.size === 0) return undefined;
  const start = histogramBuckets(before, name);
  const restarted = [...end].some(([bound, count]) => count < (start.get(bound) ?? 0));
  const bounds = [...end.keys()].sort((a, b) => a - b);
  const counts = bounds.map((bound) => (end.get(bound) ?? 0) - (restarted ? 0 : (start.get(bound) ?? 0)));
  const total = counts.at(-1) ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i += 1) {
    const count = counts[i] ?? 0;
    if (count < rank) continue;
    const upper = bounds[i] ?? 0;
    const lower = i === 0 ? 0 : (bounds[i - 1] ?? 0);
    if (upper === Number.POSITIVE_INFINITY) return lower;
    const below = i === 0 ? 0 : (counts[i - 1] ?? 0);
    return count === below ? upper : lower + ((upper - lower) * (rank - below)) / (count - below);
  }
  return undefined;
}

/** The etcd process kube-apiserver uses (its --etcd-servers URL on etcd's command line). */
async function etcdPid(apiPid: number | undefined): Promise<number | undefined> {
  if (apiPid === undefined) return undefined;
  const apiArgs = (await readFile(`/proc/${String(apiPid)}/cmdline`, 'utf8').catch(() => '')).split('\0');
  const url = apiArgs.find((arg) => arg.startsWith('--etcd-servers='))?.slice('--etcd-servers='.length);
  if (url === undefined) return undefined;
  return findProcess((argv) => argv[0]?.endsWith('etcd') === true && argv.some((arg) => arg.includes(url)));
}

/** The real runtimed: scale-runtimed.ts with RUNTIME_NAME of the measured Runtime. */
async function runtimedPid(): Promise<number | undefined> {
  return findProcess(
    (argv) => argv.some((arg) => arg.endsWith('scale-runtimed.ts')),
    (environ) => environ.includes(`RUNTIME_NAME=${REAL_RUNTIME}`),
  );
}

async function findProcess(matches: (argv: string[]) => boolean, environ?: (env: string[]) => boolean): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!matches(argv)) continue;
    if (environ !== undefined && !environ((await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '')).split('\0'))) continue;
    return Number(entry);
  }
  return undefined;
}

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Writes of a request delta, without the Leases' renewals (which never stop). */
function writesOf(delta: { byKind: [string, number][] }): number {
  return delta.byKind
    .filter(([kind]) => WRITE_VERBS.has(kind.split(' ')[0] ?? '') && !kind.endsWith(' leases'))
    .reduce((sum, [, count]) => sum + count, 0);
}

function topKinds(delta: { byKind: [string, number][] }, seconds: number, count = 6): string {
  return delta.byKind
    .slice(0, count)
    .map(([kind, n]) => `${(n / seconds).toFixed(1)} ${kind}`)
    .join(', ');
}

const fmt = (value: number | undefined, digits = 0, unit = ''): string =>
  value === undefined || Number.isNaN(value) ? 'n/a' : `${value.toFixed(digits)}${unit}`;
const mib = (kib: number | undefined): string => fmt(kib === undefined ? undefined : kib / 1024, 0, ' MiB');
const ms = (seconds: number | undefined): string => fmt(seconds === undefined ? undefined : seconds * 1000, 1, ' ms');

/** Resolves with `work`, or fails after `ms` (the work is left behind; cleanup stops everything). */
async function within<T>(what: string, timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`${what}: not done within ${String(Math.round(timeoutMs / 1000))} s`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ------------------------------------------------------------------ the bench
interface Sample {
  rss: Partial<Record<Measured, number>>;
  /** CPU seconds used so far (user + system). */
  cpu: Partial<Record<Measured, number>>;
  heap: Partial<Record<Measured, number>>;
}
interface PointResult {
  runs: number;
  createPerSecond: number;
  createSeconds: number;
  settleSeconds: number;
  pointSeconds: number;
  sample: Sample;
  createRequestsPerSecond: number;
  idleRequestsPerSecond: number;
  idleWritesPerSecond: number;
  passP50: number | undefined;
  passP99: number | undefined;
  renewP99: Partial<Record<ControllerName, number>>;
  transitionFailures: number;
  /** Services that exited and were started again during the point. */
  restarted: readonly string[];
}

const stateDir = await mkdtemp(join(tmpdir(), 'scale-bench-'));
cleanup.push(() => rm(stateDir, { recursive: true, force: true }));
log(`points ${POINTS.join(', ')} Runs; backlog ${String(BACKLOG)}; ${String(CONCURRENCY)} creations in flight; logs in ${stateDir}`);
try {
  const controlPlane = await ControlPlane.start({
    crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')],
    manifestFiles: [join(REPO_ROOT, 'deploy/charts/kruntimes/admission/policies.yaml')],
  });
  cleanup.push(() => controlPlane.stop());
  const cluster = new Cluster(controlPlane.info);
  const admin = cluster.kubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const coordination = admin.makeApiClient(CoordinationV1Api);
  const { runs, runtimes } = kruntimesClients(admin);
  const ns = (await cluster.createNamespace({ prefix: 'scale', waitForDefaultServiceAccount: true })).name;
  const systemNs = (await cluster.createNamespace({ prefix: 'scale-system' })).name;
  await new NamespaceAccess(cluster, ns).grantServiceAccount('default', 'runtimed', RUNTIMED_ROLE_RULES);

  // Files the services read: a kubeconfig, the internal CA, the gateway's serving certificate.
  const kubeconfig = join(stateDir, 'admin.kubeconfig');
  const { server, caPem } = controlPlane.info;
  await writeFile(kubeconfig, kubeconfigYaml({ server, caPem, user: ADMIN_USER, token: cluster.user(ADMIN_USER).token }), { mode: 0o600 });
  const internalCa = await createCertificateAuthority();
  const caDir = join(stateDir, 'internal-ca');
  await mkdir(caDir, { mode: 0o700 });
  await writeFile(join(caDir, 'ca.crt'), internalCa.certPem);
  await writeFile(join(caDir, 'ca.key'), internalCa.keyPem, { mode: 0o600 });
  const gatewayCa = await testCa('scale-bench gateway CA');
  const serving = await testServerCert(gatewayCa, { dns: ['localhost'], ips: ['127.0.0.1'] });
  await writeFile(join(stateDir, 'gateway.crt'), serving.certPem);
  await writeFile(join(stateDir, 'gateway.key'), serving.keyPem, { mode: 0o600 });

  // The local node: Runtime Pods as processes.
  const node = new LocalNode(
    admin,
    {
      nodeName: 'scale',
      stateDir: join(stateDir, 'node'),
      namespaces: [ns],
      images: {
        'kruntimes/runtimed': {
          entrypoint: [process.execPath, join(REPO_ROOT, 'tools/benchmarks/src/scale-runtimed.ts')],
          env: { KRT_SCALE_REAL_RUNTIME: REAL_RUNTIME },
        },
        'kruntimes/runtime-server-python': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')] },
      },
      kubeletServer: cluster.info.kubeletServer,
    },
    { deleteNodeOnStop: true },
  );
  await node.start();
  cleanup.push(() => node.stop({ graceMs: 5_000 }));

  // The services, each its own process.
  const ports = await freePorts(10);
  const port = (): number => {
    const next = ports.shift();
    if (next === undefined) throw new Error('out of free ports');
    return next;
  };
  const lease = ['--lease-namespace', systemNs];
  const endpoints = (metrics: number, health?: number): string[] => [
    ...['--metrics-address', `127.0.0.1:${String(metrics)}`],
    ...(health === undefined ? [] : ['--health-address', `127.0.0.1:${String(health)}`]),
  ];
  const services = new Map<ServiceName, ServiceProcess>();
  const controller = (name: ControllerName, extra: string[]): void => {
    const [metrics, health] = [port(), port()];
    const args = ['--kubeconfig', kubeconfig, ...lease, ...endpoints(metrics, health), ...extra];
    services.set(name, new ServiceProcess(name, join(stateDir, `${name}.log`), metrics, health, args));
  };
  controller('scheduler', []);
  controller('controller-manager', [
    ...[
      '--internal-ca-dir',
      caDir,
      '--runtimed-image',
      'kruntimes/runtimed:bench',
      '--python-image',
      'kruntimes/runtime-server-python:bench',
    ],
    ...['--runtime-service-account', 'default', '--runtime-server-listen', 'podIP', '--finished-runs-per-runtime', '1000000'],
  ]);
  controller('stale-recovery', []);
  const gatewayPort = port();
  const gatewayMetrics = port();
  services.set(
    'runtime-gateway',
    new ServiceProcess('runtime-gateway', join(stateDir, 'runtime-gateway.log'), gatewayMetrics, undefined, [
      ...['--listen', `127.0.0.1:${String(gatewayPort)}`, '--tls-cert-file', join(stateDir, 'gateway.crt')],
      ...['--tls-key-file', join(stateDir, 'gateway.key'), '--runtimed-ca-file', join(caDir, 'ca.crt'), '--resolve', 'endpoints'],
      ...['--kubeconfig', kubeconfig, ...endpoints(gatewayMetrics), '--drain-seconds', '5', '--shutdown-delay-seconds', '0'],
    ]),
  );
  const service = (name: ServiceName): ServiceProcess => {
    const found = services.get(name);
    if (found === undefined) throw new Error(`no service ${name}`);
    return found;
  };
  for (const svc of services.values()) {
    svc.start();
    cleanup.push(() => svc.stop());
  }
  const syncedWait = { timeoutMs: 300_000, intervalMs: 200 };
  for (const name of CONTROLLERS) {
    const svc = service(name);
    await waitFor(`${name} leading and synced`, async () => ((await svc.synced()) ? true : undefined), syncedWait);
  }
  await waitFor(
    'the runtime-gateway ready',
    async () =>
      (await call(`https://127.0.0.1:${String(gatewayPort)}/readyz`, { ca: gatewayCa.certPem, method: 'GET' })).status === 200
        ? true
        : undefined,
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  log('scheduler, controller-manager, stale-recovery and runtime-gateway running, each its own process; the controllers lead and synced');

  // Lease monitor: every 2 s, bounded by the bench's own end.
  const leaseEvents: string[] = [];
  const lastEvent = new Map<ControllerName, string>();
  const restarting = new Set<ControllerName>();
  const lastLease = new Map<ControllerName, { holder: string; transitions: number }>();
  let leaseReads = 0;
  let leaseReadFailures = 0;
  const readLeases = async (): Promise<void> => {
    leaseReads += 1;
    try {
      const leases = (await coordination.listNamespacedLease({ namespace: systemNs })).items;
      for (const name of CONTROLLERS) {
        const object = leases.find((l) => l.metadata?.name === LEASES[name]);
        const now = { holder: object?.spec?.holderIdentity ?? '', transitions: object?.spec?.leaseTransitions ?? 0 };
        const before = lastLease.get(name);
        lastLease.set(name, now);
        if (restarting.has(name)) continue;
        const own = now.holder.startsWith(`${service(name).podName}_`);
        const moved = before !== undefined && (before.holder !== now.holder || before.transitions !== now.transitions);
        if (!own || moved) {
          const event = `${name}: holder ${before?.holder ?? '?'} -> ${now.holder || '(none)'}, transitions ${String(before?.transitions ?? '?')} -> ${String(now.transitions)}`;
          // Logged once per change: the same stale holder is read again on every poll until the new process takes over.
          if (lastEvent.get(name) !== event) {
            lastEvent.set(name, event);
            leaseEvents.push(event);
            log(`!! lease: ${event}`);
          }
        }
      }
    } catch {
      leaseReadFailures += 1;
    }
  };
  await readLeases();
  let leaseReading = false;
  const leaseTimer = setInterval(() => {
    if (leaseReading) return;
    leaseReading = true;
    void readLeases().finally(() => {
      leaseReading = false;
    });
  }, 2_000);
  cleanup.push(() => {
    clearInterval(leaseTimer);
    return Promise.resolve();
  });

  // Runtimes and their Pods.
  const createRuntime = async (name: string, spec: Partial<RuntimeSpec>): Promise<void> => {
    const created = await runtimes.create(ns, {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Runtime',
      metadata: { name, namespace: ns },
      spec: { language: 'python', ...spec },
    });
    if (!created.ok) throw new Error(`Runtime ${name}: ${created.reason}`);
  };
  const readyPods = (runtime: string, count: number) =>
    waitFor(
      `${String(count)} ready Pods of ${runtime}`,
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: podLabelSelector(runtime) })).items;
        const ready = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
        return ready.length === count ? ready : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
  await createRuntime('held', { suspend: true, replicas: 0 });
  await createRuntime('room', { replicas: 4, runs: 250 });
  await createRuntime('history', { suspend: true, replicas: 1, runs: 1 });
  await createRuntime('backlog', { suspend: true, replicas: 4, runs: 250 });
  await createRuntime(REAL_RUNTIME, { replicas: 1, runs: 1 });
  const [historyPod] = await readyPods('history', 1);
  await Promise.all([readyPods('room', 4), readyPods('backlog', 4), readyPods(REAL_RUNTIME, 1)]);
  const bindTarget = { pod: historyPod?.metadata?.name ?? '', podUID: historyPod?.metadata?.uid ?? '' };
  const realPod = (await core.listNamespacedPod({ namespace: ns, labelSelector: podLabelSelector(REAL_RUNTIME) })).items[0];
  const runtimedMetricsUrl = `http://${realPod?.status?.podIP ?? '127.0.0.1'}:9464/metrics`;
  log(
    'Runtimes held (suspended, no Pods), room (4 x 250), history (suspended, 1), backlog (suspended, 4 x 250), real (1, real runtimed) ready',
  );

  const watch = await RunPhaseWatch.start(admin, ns);
  cleanup.push(() => {
    watch.stop();
    return Promise.resolve();
  });
  const apiPid = await apiServerPid(controlPlane.info);
  const etcd = await etcdPid(apiPid);

  const sample = async (): Promise<Sample> => {
    const runtimed = await runtimedPid();
    const pids: Record<Measured, number | undefined> = {
      scheduler: service('scheduler').pid,
      'controller-manager': service('controller-manager').pid,
      'stale-recovery': service('stale-recovery').pid,
      'runtime-gateway': service('runtime-gateway').pid,
      runtimed,
      'kube-apiserver': apiPid,
      etcd,
    };
    const result: Sample = { rss: {}, cpu: {}, heap: {} };
    for (const name of MEASURED) {
      const pid = pids[name];
      const rss = await rssKiB(pid);
      if (rss !== undefined) result.rss[name] = rss;
      const cpu = pid === undefined ? undefined : await processCpuSeconds(pid).catch(() => undefined);
      if (cpu !== undefined) result.cpu[name] = cpu;
    }
    for (const name of SERVICES) {
      const heap = metricSum(await service(name).metrics(), HEAP_METRIC);
      if (heap !== undefined) result.heap[name] = heap;
    }
    const runtimedHeap = metricSum(await scrape(runtimedMetricsUrl), HEAP_METRIC);
    if (runtimedHeap !== undefined) result.heap.runtimed = runtimedHeap;
    return result;
  };
  const printSample = (label: string, s: Sample, runsNow: number, base: Sample | undefined, restarted: readonly string[] = []): void => {
    for (const name of MEASURED) {
      const rss = s.rss[name];
      const baseRss = base?.rss[name];
      const perRun = rss !== undefined && baseRss !== undefined && runsNow > 0 ? (rss - baseRss) / runsNow : undefined;
      const heap = s.heap[name];
      const baseHeap = base?.heap[name];
      const heapPerRun = heap !== undefined && baseHeap !== undefined && runsNow > 0 ? (heap - baseHeap) / 1024 / runsNow : undefined;
      log(
        `  ${label} ${name.padEnd(18)} resident ${mib(rss).padStart(9)}  heap ${fmt(heap === undefined ? undefined : heap / 2 ** 20, 0, ' MiB').padStart(8)}` +
          (base === undefined
            ? ''
            : `  ${fmt(perRun, 2, ' KiB/Run')} resident growth, ${fmt(heapPerRun, 2, ' KiB/Run')} live heap growth`) +
          (restarted.includes(name) ? '  (restarted during the point: a fresh process, not comparable)' : ''),
      );
    }
  };
  const metricsAll = async (): Promise<Record<ServiceName, string | undefined>> => ({
    scheduler: await service('scheduler').metrics(),
    'controller-manager': await service('controller-manager').metrics(),
    'stale-recovery': await service('stale-recovery').metrics(),
    'runtime-gateway': await service('runtime-gateway').metrics(),
  });

  /**
   * Waits until the API server's write rate (Leases aside) falls under 2/s over 5 s, at most
   * `maxMs`; returns the last window's figures.
   */
  const settle = async (
    maxMs: number,
  ): Promise<{ quiet: boolean; seconds: number; requestsPerSecond: number; writesPerSecond: number; top: string }> => {
    const started = performance.now();
    for (let window = 0; window < Math.ceil(maxMs / 5_000); window += 1) {
      const before = await apiServerRequests(controlPlane.info);
      const t0 = performance.now();
      await sleep(5_000);
      const delta = apiServerRequestDelta(before, await apiServerRequests(controlPlane.info));
      const seconds = (performance.now() - t0) / 1000;
      const writes = writesOf(delta) / seconds;
      const result = {
        seconds: (performance.now() - started) / 1000,
        requestsPerSecond: delta.total / seconds,
        writesPerSecond: writes,
        top: topKinds(delta, seconds),
      };
      if (writes < 2) return { quiet: true, ...result };
      if (performance.now() - started >= maxMs) return { quiet: false, ...result };
    }
    return {
      quiet: false,
      seconds: (performance.now() - started) / 1000,
      requestsPerSecond: Number.NaN,
      writesPerSecond: Number.NaN,
      top: '',
    };
  };

  // The empty baseline.
  const baselineSettle = await settle(60_000);
  const baseline = await sample();
  log(`baseline, no Runs (API server ${baselineSettle.requestsPerSecond.toFixed(1)} requests/s idle: ${baselineSettle.top}):`);
  printSample('base', baseline, 0, undefined);

  const names: { name: string; kind: Kind }[] = [];
  const nameOf = (i: number): { name: string; kind: Kind } => {
    const { kind } = KINDS[i % KINDS.length] ?? KINDS[0];
    return { name: `${kind}-${String(i).padStart(6, '0')}`, kind };
  };
  const rfc3339 = (): string => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  let transitionFailures = 0;
  const createRun = async (name: string, runtime: string): Promise<Run> => {
    const body: Run = {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name, namespace: ns },
      spec: { runtime, source: { inline: 'print(1)\n' }, mode: { task: {} }, ttlSecondsAfterFinished: TTL_SECONDS },
    };
    for (let attempt = 1; ; attempt += 1) {
      try {
        const created = await runs.create(ns, body);
        if (created.ok) return created.object;
        throw new Error(`${name}: ${created.reason}`);
      } catch (error) {
        if (attempt >= 3) throw error;
        await sleep(1_000 * attempt);
      }
    }
  };
  /** The executor's part of a finished Run: Bind (as the scheduler), Claim and Succeeded (as runtimed). */
  const finish = async (created: Run): Promise<void> => {
    const steps = [
      { writer: 'scheduler', event: { type: 'Bind', ...bindTarget } },
      { writer: 'runtimed', event: { type: 'Claim' }, sequence: 1 },
      { writer: 'runtimed', event: { type: 'Succeeded', outputs: { answer: '42' } }, sequence: 2 },
    ] as const;
    let current: Run = created;
    for (const step of steps) {
      const sequence = 'sequence' in step ? step.sequence : undefined;
      const written = await writeTransition(runs, current, step.event, {
        writer: step.writer,
        now: rfc3339,
        ...(sequence === undefined ? {} : { sequence: () => sequence }),
        retries: 5,
      });
      if (!written.ok) {
        transitionFailures += 1;
        if (transitionFailures <= 5) log(`!! ${created.metadata.name ?? ''}: ${step.event.type} not written (${written.reason})`);
        return;
      }
      current = written.object;
    }
  };
  const countPhase = (kind: Kind, phase: string): number => names.filter((n) => n.kind === kind && watch.phase(n.name) === phase).length;

  const results: PointResult[] = [];
  let metricsBefore = await metricsAll();
  let previousSample = baseline;
  for (const target of POINTS) {
    const pointStart = performance.now();
    const from = names.length;
    for (let i = from; i < target; i += 1) names.push(nameOf(i));
    const batch = names.slice(from);
    const failuresBefore = transitionFailures;
    const generations = new Map(SERVICES.map((name) => [name, service(name).generation]));
    log(`point ${String(target)}: creating ${String(batch.length)} Runs`);
    const requestsBefore: ApiServerRequests = await apiServerRequests(controlPlane.info);
    const createStart = performance.now();
    let created = 0;
    const progress = setInterval(() => {
      log(`  ${String(created)} of ${String(batch.length)} created`);
    }, 30_000);
    try {
      await within(
        `creating ${String(batch.length)} Runs`,
        120_000 + batch.length * 200,
        forEachLimited(batch, CONCURRENCY, async ({ name, kind }) => {
          const runtime = KINDS.find((k) => k.kind === kind)?.runtime ?? '';
          const run = await createRun(name, runtime);
          if (kind === 'done') await finish(run);
          created += 1;
        }),
      );
    } finally {
      clearInterval(progress);
    }
    const createSeconds = (performance.now() - createStart) / 1000;
    const createDelta = apiServerRequestDelta(requestsBefore, await apiServerRequests(controlPlane.info));
    log(
      `  created in ${createSeconds.toFixed(1)} s = ${(batch.length / createSeconds).toFixed(0)} Runs/s ` +
        `(finished ones with their 3 status writes); API server ${(createDelta.total / createSeconds).toFixed(0)} requests/s: ${topKinds(createDelta, createSeconds)}`,
    );
    // Settled: every Run seen, what fits into `room` bound, the API server's writes quiet.
    const settleStart = performance.now();
    const queued = names.filter((n) => n.kind === 'queued').length;
    const bound = await waitFor(
      'Runs seen and bound',
      () => {
        const seen = names.every((n) => watch.has(n.name));
        const scheduled = countPhase('queued', 'Scheduled');
        return Promise.resolve(seen && scheduled >= Math.min(queued, ROOM) ? scheduled : undefined);
      },
      { timeoutMs: 600_000, intervalMs: 1_000 },
    ).catch((error: unknown) => {
      log(`!! ${String(error)}`);
      return countPhase('queued', 'Scheduled');
    });
    const quiet = await settle(180_000);
    const settleSeconds = (performance.now() - settleStart) / 1000;
    log(
      `  settled in ${settleSeconds.toFixed(0)} s (${String(bound)} queued Runs bound, ${String(countPhase('done', 'Succeeded'))} finished; ` +
        `${quiet.quiet ? 'writes quiet' : 'writes NOT quiet after 180 s'}: ${quiet.writesPerSecond.toFixed(1)} writes/s, ${quiet.requestsPerSecond.toFixed(1)} requests/s: ${quiet.top})`,
    );
    const pointSample = await sample();
    const metricsAfter = await metricsAll();
    const renewP99: Partial<Record<ControllerName, number>> = {};
    for (const name of CONTROLLERS) {
      const value = histogramQuantile(metricsBefore[name], metricsAfter[name], RENEW_METRIC, 0.99);
      if (value !== undefined) renewP99[name] = value;
    }
    const result: PointResult = {
      runs: target,
      createPerSecond: batch.length / createSeconds,
      createSeconds,
      settleSeconds,
      pointSeconds: 0,
      sample: pointSample,
      createRequestsPerSecond: createDelta.total / createSeconds,
      idleRequestsPerSecond: quiet.requestsPerSecond,
      idleWritesPerSecond: quiet.writesPerSecond,
      passP50: histogramQuantile(metricsBefore.scheduler, metricsAfter.scheduler, PASS_METRIC, 0.5),
      passP99: histogramQuantile(metricsBefore.scheduler, metricsAfter.scheduler, PASS_METRIC, 0.99),
      renewP99,
      transitionFailures: transitionFailures - failuresBefore,
      restarted: SERVICES.filter((name) => service(name).generation !== generations.get(name)),
    };
    metricsBefore = metricsAfter;
    result.pointSeconds = (performance.now() - pointStart) / 1000;
    results.push(result);
    log(
      `point ${String(target)} Runs (took ${result.pointSeconds.toFixed(0)} s): scheduler pass p50 ${ms(result.passP50)}, p99 ${ms(result.passP99)}; ` +
        `lease renew p99 ${CONTROLLERS.map((c) => `${c} ${ms(renewP99[c])}`).join(', ')}`,
    );
    const restartedNames = SERVICES.filter((name) => service(name).generation !== generations.get(name));
    printSample(String(target), pointSample, target, baseline, restartedNames);
    log(
      `  CPU over the point: ${MEASURED.map((m) => {
        const now = pointSample.cpu[m];
        const then = previousSample.cpu[m];
        return `${m} ${fmt(now === undefined || then === undefined || now < then ? undefined : now - then, 1, ' s')}`;
      }).join(', ')}`,
    );
    previousSample = pointSample;
  }

  // ------------------------------------------------------------------ restarts at the last point
  const restarts: { name: ControllerName; stopSeconds: number; syncedSeconds: number | undefined; rssAfter: number | undefined }[] = [];
  const lastRuns = names.length;
  for (const name of CONTROLLERS) {
    const svc = service(name);
    restarting.add(name);
    const t0 = performance.now();
    await svc.stop();
    const stopped = performance.now();
    svc.start();
    const synced = await waitFor(`${name} synced after its restart`, async () => ((await svc.synced()) ? performance.now() : undefined), {
      timeoutMs: 300_000,
      intervalMs: 100,
    }).catch((error: unknown) => {
      log(`!! ${String(error)}`);
      return undefined;
    });
    const rssAfter = await rssKiB(svc.pid);
    await waitFor(
      `${name}'s new process holding its lease`,
      () => Promise.resolve(lastLease.get(name)?.holder.startsWith(`${svc.podName}_`) === true ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 500 },
    ).catch((error: unknown) => {
      log(`!! ${String(error)}`);
    });
    restarting.delete(name);
    const entry = {
      name,
      stopSeconds: (stopped - t0) / 1000,
      syncedSeconds: synced === undefined ? undefined : (synced - stopped) / 1000,
      rssAfter,
    };
    restarts.push(entry);
    log(
      `restart of ${name} at ${String(lastRuns)} Runs: SIGTERM -> exited ${entry.stopSeconds.toFixed(1)} s; ` +
        `start -> synced ${fmt(entry.syncedSeconds, 1, ' s')}; resident just after ${mib(rssAfter)}`,
    );
  }

  // ------------------------------------------------------------------ binds/s with a backlog
  let backlogResult:
    { rate: number | undefined; firstBindSeconds: number | undefined; bound: number; count: number; createSeconds: number } | undefined;
  if (BACKLOG > 0) {
    const backlogNames = Array.from({ length: BACKLOG }, (_, i) => `backlog-${String(i).padStart(6, '0')}`);
    log(`backlog: creating ${String(BACKLOG)} Runs on the suspended Runtime backlog (4 x 250)`);
    const createStart = performance.now();
    await within(
      `creating ${String(BACKLOG)} backlog Runs`,
      120_000 + BACKLOG * 200,
      forEachLimited(backlogNames, CONCURRENCY, async (name) => {
        await createRun(name, 'backlog');
      }),
    );
    const createSeconds = (performance.now() - createStart) / 1000;
    await waitFor('backlog Runs seen', () => Promise.resolve(backlogNames.every((name) => watch.has(name)) ? true : undefined), {
      timeoutMs: 300_000,
      intervalMs: 1_000,
    });
    const quiet = await settle(180_000);
    log(`  created in ${createSeconds.toFixed(1)} s; settled (${quiet.writesPerSecond.toFixed(1)} writes/s); resuming the Runtime`);
    const metricsStart = await service('scheduler').metrics();
    const resumedAt = performance.now();
    const patched = await runtimes.mergePatch(ns, 'backlog', { spec: { suspend: false } });
    if (!patched.ok) throw new Error(`resuming Runtime backlog: ${patched.reason}`);
    const target = Math.min(BACKLOG, ROOM);
    const boundTimes = (): number[] =>
      backlogNames
        .map((name) => watch.seenAt(name, 'Scheduled'))
        .filter((t): t is number => t !== undefined)
        .sort((a, b) => a - b);
    await waitFor('backlog binds', () => Promise.resolve(boundTimes().length >= target ? true : undefined), {
      timeoutMs: 600_000,
      intervalMs: 500,
    }).catch((error: unknown) => {
      log(`!! ${String(error)}`);
    });
    const times = boundTimes();
    const first = times[0];
    const last = times[Math.min(times.length, target) - 1];
    const rate =
      first !== undefined && last !== undefined && last > first
        ? (Math.min(times.length, target) - 1) / ((last - first) / 1000)
        : undefined;
    const metricsEnd = await service('scheduler').metrics();
    backlogResult = {
      rate,
      firstBindSeconds: first === undefined ? undefined : (first - resumedAt) / 1000,
      bound: times.length,
      count: BACKLOG,
      createSeconds,
    };
    log(
      `binds with a backlog of ${String(BACKLOG)} (${String(names.length + BACKLOG)} Runs in the namespace): ${fmt(rate, 0, ' binds/s')} ` +
        `from the first bind to the ${String(target)}th (${String(times.length)} bound); resume -> first bind ${fmt(backlogResult.firstBindSeconds, 2, ' s')}; ` +
        `scheduler pass p50 ${ms(histogramQuantile(metricsStart, metricsEnd, PASS_METRIC, 0.5))}, p99 ${ms(histogramQuantile(metricsStart, metricsEnd, PASS_METRIC, 0.99))}`,
    );
  }
  await readLeases();

  // ------------------------------------------------------------------ summary
  const lostLeadership = new Map<ControllerName, number>();
  for (const name of CONTROLLERS) {
    const text = await readFile(service(name).logFile, 'utf8').catch(() => '');
    lostLeadership.set(name, text.split('\n').filter((line) => line.includes('lost leadership') || line.includes('lease; exiting')).length);
  }
  log('');
  log(
    `summary (resident MiB, growth KiB/Run over the empty baseline, * restarted during the point; live heap MiB (KiB/Run) where exported; services' heap sized for a ${String(MEMORY_LIMIT_MIB)} MiB limit):`,
  );
  const header = [
    'Runs',
    'create/s',
    ...MEASURED.map((m) => m.replace('controller-manager', 'ctrl-mgr').replace('runtime-gateway', 'gateway')),
  ];
  const widths = header.map((h) => Math.max(h.length, 16));
  const row = (cells: string[]): void => {
    log(cells.map((cell, i) => cell.padStart(widths[i] ?? 16)).join(' '));
  };
  row(header);
  row(['0', '', ...MEASURED.map((m) => fmt(baseline.rss[m] === undefined ? undefined : (baseline.rss[m] ?? 0) / 1024, 0))]);
  for (const r of results) {
    row([
      String(r.runs),
      r.createPerSecond.toFixed(0),
      ...MEASURED.map((m) => {
        const rss = r.sample.rss[m];
        const base = baseline.rss[m];
        const perRun = rss !== undefined && base !== undefined ? (rss - base) / r.runs : undefined;
        return `${r.restarted.includes(m) ? '*' : ''}${fmt(rss === undefined ? undefined : rss / 1024, 0)} (${fmt(perRun, 2)})`;
      }),
    ]);
    row([
      '  live heap',
      '',
      ...MEASURED.map((m) => {
        const heap = r.sample.heap[m];
        const base = baseline.heap[m];
        const perRun = heap !== undefined && base !== undefined ? (heap - base) / 1024 / r.runs : undefined;
        return heap === undefined ? 'n/a' : `${fmt(heap / 2 ** 20, 0)} (${fmt(perRun, 2)})`;
      }),
    ]);
  }
  log('');
  log(
    'per point: point took | create s | settle s | API req/s creating | req/s idle (writes/s) | pass p50 / p99 | renew p99 sched / cm / sr | status writes refused',
  );
  for (const r of results)
    log(
      `  ${String(r.runs).padStart(6)}: ${r.pointSeconds.toFixed(0)} s | ${r.createSeconds.toFixed(0)} | ${r.settleSeconds.toFixed(0)} | ${r.createRequestsPerSecond.toFixed(0)} | ` +
        `${r.idleRequestsPerSecond.toFixed(1)} (${r.idleWritesPerSecond.toFixed(1)}) | ${ms(r.passP50)} / ${ms(r.passP99)} | ` +
        `${CONTROLLERS.map((c) => ms(r.renewP99[c])).join(' / ')} | ${String(r.transitionFailures)}`,
    );
  log('');
  log('goals (a floor to read against, not asserted):');
  const kept = CONTROLLERS.map((name) => {
    const events = leaseEvents.filter((e) => e.startsWith(`${name}:`)).length;
    const exits = service(name).unexpectedExits.length;
    const lost = lostLeadership.get(name) ?? 0;
    return {
      name,
      ok: events === 0 && exits === 0 && lost === 0,
      detail: `${String(events)} lease changes, ${String(exits)} exits, ${String(lost)} 'lost' log lines`,
    };
  });
  log(
    `  every controller keeps its lease through the bench: ${kept.every((k) => k.ok) ? 'yes' : 'NO'} ` +
      `(${kept.map((k) => `${k.name} ${k.ok ? 'kept' : 'LOST'}: ${k.detail}`).join('; ')}; ${String(leaseReads)} Lease reads, ${String(leaseReadFailures)} failed)`,
  );
  const last = results.at(-1);
  if (last !== undefined)
    for (const name of CONTROLLERS) {
      const rss = last.sample.rss[name];
      const base = baseline.rss[name];
      const perRun = rss !== undefined && base !== undefined ? (rss - base) / last.runs : undefined;
      log(
        `  <= ${String(GOALS.kibPerRun)} KiB resident per Run, ${name} at ${String(last.runs)}: ${fmt(perRun, 2, ' KiB')} ` +
          (perRun === undefined ? '' : perRun <= GOALS.kibPerRun ? '(meets)' : '(MISSES)'),
      );
    }
  if (backlogResult !== undefined)
    log(
      `  >= ${String(GOALS.bindsPerSecond)} binds/s with a ${String(backlogResult.count)} backlog: ${fmt(backlogResult.rate, 0, ' binds/s')} ` +
        (backlogResult.rate === undefined ? '' : backlogResult.rate >= GOALS.bindsPerSecond ? '(meets)' : '(MISSES)'),
    );
  for (const r of restarts)
    log(
      `  synced within ${String(GOALS.syncedSeconds)} s of a restart at ${String(RESTART_GOAL_AT)} (here ${String(lastRuns)} Runs), ${r.name}: ${fmt(r.syncedSeconds, 1, ' s')} ` +
        (r.syncedSeconds === undefined ? '' : r.syncedSeconds <= GOALS.syncedSeconds ? '(meets)' : '(MISSES)'),
    );
  if (watch.errors.length > 0) log(`bench watch: ${String(watch.restarts)} resumed, errors: ${watch.errors.slice(0, 3).join('; ')}`);
  log(`bench took ${((performance.now() - benchStart) / 1000).toFixed(0)} s`);
} finally {
  await runCleanup();
}
