/**
 * Benchmark (not a test): the memory footprint of a Runtime Pod and the watch traffic its
 * runtimed receives, on a real control plane with the full system (e2e System: runtimed and
 * the Python Runtime Server as local-node Pod processes, the gateway as a child process):
 *   node tools/benchmarks/src/footprint-bench.ts [foreignRuns=0,100,1000,5000] [pods=1,4,16] [concurrency=8]
 * (KRT_FOOTPRINT_HEAP_SNAPSHOTS=<dir>: a heap snapshot of every measured process at each reading, in <dir>)
 * The apps run as the images ship them: their bundled builds (dist/bundle/apps/<app>/main.mjs;
 * `npx nx run benchmarks:footprint` builds them first); KRT_E2E_ENTRYPOINTS=sources measures
 * the TypeScript sources instead (type-stripped at start, as the tests run them).
 * Beside the figures, the floors, of the same Node: a bare ES module (an idle timer), and a bare
 * @grpc/grpc-js server listening on loopback (bundled like the apps), the least any Node
 * process serving gRPC (runtimed, the Runtime Server) can cost.
 *
 * Part 1: one Pod of Runtime `py` with its own few function Runs Ready; then the namespace
 * fills with plain Runs of another Runtime (`other`, which does not exist: created with the
 * admin client, nobody runs them) up to each of `foreignRuns`, `concurrency` creates at a
 * time. Part 2, in a fresh namespace: Runtime `py` with 1, then 4, then 16 idle Pods.
 *
 * Per process, after the system settled (kube-apiserver's Run watch event counter still):
 * - RSS: VmRSS of /proc/<pid>/status;
 * - heap: V8 heapUsed as found, and live = heapUsed after a full GC;
 * - runtimed's Run watch events: counted inside each process on its watch bodies by
 *   footprint-probe.ts (bench only: `NODE_OPTIONS=--import`, loaded into every Node process
 *   of the system through KRT_E2E_NODE_OPTIONS, which also answers the heap figures);
 * - beside it, kube-apiserver's `apiserver_watch_events_total` for Runs (every watcher:
 *   controller-manager and scheduler in this process, the gateway, runtimed).
 * The Python interpreters a Runtime Server starts are their own processes (`py workers`: RSS summed).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { API_GROUP, API_VERSION, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { ResourceRequirements, Run, Runtime } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { ADMIN_USER, Cluster, ControlPlane, REPO_ROOT, call } from '@kruntimes/testing';
import type { ClusterInfo } from '@kruntimes/testing';
import { build, stop as stopEsbuild } from 'esbuild';
import { parse as parseYaml } from 'yaml';
import type { ProbeReading } from './footprint-probe.ts';

const FOREIGN_STEPS = (process.argv[2] ?? '0,100,1000,5000').split(',').map(Number);
const POD_STEPS = (process.argv[3] ?? '1,4,16').split(',').map(Number);
const CONCURRENCY = Number(process.argv[4] ?? 8);
const OWN_RUNS = 3;
const HANDLER = 'def handle(event, context):\n    return event\n';
const MB = 1024 * 1024;

type Role = 'runtimed' | 'runtime-server' | 'gateway';

interface Reading extends ProbeReading {
  role: Role;
  /** VmRSS of /proc/<pid>/status, bytes. */
  vmRss: number;
  /**
   * RssAnon of /proc/<pid>/status, bytes: the process's own memory. The rest of its RSS is
   * mostly the node binary's code pages (file-backed, ~35-45 MiB), which every process of
   * the same image on a node shares through the page cache.
   */
  rssAnon: number;
  /** RSS of the process's descendants (the Runtime Server's Python interpreters), bytes. */
  childrenRss: number;
}

async function statusBytes(pid: number, field: 'VmRSS' | 'RssAnon'): Promise<number> {
  const status = await readFile(`/proc/${String(pid)}/status`, 'utf8').catch(() => '');
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
}

const vmRss = (pid: number): Promise<number> => statusBytes(pid, 'VmRSS');

/** Every descendant's RSS summed (bounded depth). */
async function descendantsRss(pid: number, depth = 0): Promise<number> {
  if (depth > 4) return 0;
  const children = await readFile(`/proc/${String(pid)}/task/${String(pid)}/children`, 'utf8').catch(() => '');
  let sum = 0;
  for (const child of children.split(' ').filter((word) => word !== '')) {
    sum += (await vmRss(Number(child))) + (await descendantsRss(Number(child), depth + 1));
  }
  return sum;
}

async function roleOf(pid: number): Promise<Role | undefined> {
  const cmdline = await readFile(`/proc/${String(pid)}/cmdline`, 'utf8').catch(() => '');
  if (cmdline.includes('apps/runtimed/')) return 'runtimed';
  if (cmdline.includes('apps/runtime-server-')) return 'runtime-server';
  if (cmdline.includes('apps/runtime-gateway/')) return 'gateway';
  return undefined;
}

/** Asks the probe in `pid` for a reading (SIGUSR2) and waits for its file. */
async function probe(probeDir: string, pid: number, role: Role): Promise<Reading> {
  const file = join(probeDir, `${String(pid)}.json`);
  await rm(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text !== undefined) {
      const reading = JSON.parse(text) as ProbeReading;
      return {
        ...reading,
        role,
        vmRss: await vmRss(pid),
        rssAnon: await statusBytes(pid, 'RssAnon'),
        childrenRss: await descendantsRss(pid),
      };
    }
    await sleep(50);
  }
  throw new Error(`no probe reading from ${role} ${String(pid)} within 10 s`);
}

async function readAll(system: System, probeDir: string): Promise<Reading[]> {
  const gateway = system.gateway;
  const pids = [...system.node.pids(), ...(gateway === undefined ? [] : [gateway.pid])];
  const readings: Reading[] = [];
  for (const pid of pids) {
    const role = await roleOf(pid);
    if (role !== undefined) readings.push(await probe(probeDir, pid, role));
  }
  return readings;
}

/** kube-apiserver's Run watch events sent (all watchers) and its open Run watches. */
async function apiServerRunWatches(info: ClusterInfo): Promise<{ events: number; watchers: number }> {
  const admin = info.users.find((user) => user.name === ADMIN_USER);
  if (admin === undefined) throw new Error('no admin user');
  const answer = await call(`${info.server}/metrics`, {
    ca: info.caPem,
    method: 'GET',
    headers: { authorization: `Bearer ${admin.token}` },
  });
  if (answer.status !== 200) throw new Error(`kube-apiserver /metrics answered ${String(answer.status)}`);
  let events = 0;
  let watchers = 0;
  for (const match of answer.body.matchAll(/^(\w+)\{([^}]*)\} (\S+)$/gm)) {
    const [, name, labels = '', value] = match;
    const runs = labels.includes(`group="${API_GROUP}"`) && (labels.includes('kind="Run"') || labels.includes('resource="runs"'));
    if (name === 'apiserver_watch_events_total' && runs) events += Number(value);
    if (name === 'apiserver_longrunning_requests' && labels.includes('resource="runs"') && labels.includes('verb="WATCH"'))
      watchers += Number(value);
  }
  return { events, watchers };
}

/** Resolves once the API server's Run watch event counter held still for 2 s (at most 60 s). */
async function settle(info: ClusterInfo): Promise<void> {
  let last = -1;
  let still = 0;
  for (let i = 0; i < 60 && still < 2; i += 1) {
    const { events } = await apiServerRunWatches(info);
    still = events === last ? still + 1 : 0;
    last = events;
    await sleep(1_000);
  }
}

const mb = (bytes: number): string => (bytes / MB).toFixed(0).padStart(4);
const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
const max = (values: readonly number[]): number => Math.max(...values);
/** `rss/anon/heap/live` MB of one role, the mean over its processes (and `max` RSS when more than one). */
function memory(readings: readonly Reading[], role: Role): string {
  const of = readings.filter((reading) => reading.role === role);
  if (of.length === 0) return '-';
  const rss = of.map((reading) => reading.vmRss);
  const text = [rss, of.map((r) => r.rssAnon), of.map((r) => r.heapUsed), of.map((r) => r.liveHeap)]
    .map((values) => mb(mean(values)))
    .join('');
  return of.length > 1 ? `${text} (max rss ${mb(max(rss)).trim()})` : text;
}

async function foreignRuns(system: System, from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let guard = 0; guard <= to && next < to; guard += 1) {
        const name = `other-${String(next).padStart(5, '0')}`;
        next += 1;
        const body: Run = {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: 'Run',
          metadata: { name },
          spec: { runtime: 'other', source: { inline: 'print(1)\n' }, mode: { task: {} } },
        };
        await system.objects.createNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace: system.name,
          plural: RUN_PLURAL,
          body,
        });
      }
    }),
  );
}

async function scale(system: System, runtime: string, replicas: number): Promise<void> {
  const ref = { group: API_GROUP, version: API_VERSION, namespace: system.name, plural: RUNTIME_PLURAL, name: runtime };
  const current = (await system.objects.getNamespacedCustomObject(ref)) as Runtime;
  await system.objects.replaceNamespacedCustomObject({ ...ref, body: { ...current, spec: { ...current.spec, replicas } } });
}

async function waitPods(system: System, runtime: string, count: number): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await system.waitRuntimeReady(runtime, count);
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

/** `RSS anon` MB of `node <args> <script>` after it ran idle for 2 s. */
async function idleNode(args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  try {
    await sleep(2_000);
    const pid = child.pid ?? -1;
    return `${mb(await vmRss(pid))}${mb(await statusBytes(pid, 'RssAnon'))}`.trim();
  } finally {
    child.kill();
  }
}

/** The floors' two scripts in `dir`: an idle ES module, and a bundled idle gRPC server. */
async function floorScripts(dir: string): Promise<{ idle: string; grpc: string }> {
  const idle = join(dir, 'idle.mjs');
  await writeFile(idle, 'setInterval(() => undefined, 1e6);\n');
  const grpc = join(dir, 'grpc-server.mjs');
  await build({
    stdin: {
      contents: [
        "import { Server, ServerCredentials } from '@grpc/grpc-js';",
        "new Server().bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), () => undefined);",
        'setInterval(() => undefined, 1e6);',
      ].join('\n'),
      resolveDir: REPO_ROOT,
      loader: 'js',
    },
    outfile: grpc,
    bundle: true,
    platform: 'node',
    format: 'esm',
    minifyWhitespace: true,
    minifySyntax: true,
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'error',
  });
  // esbuild's service process would otherwise stay a child of the bench to its end.
  await stopEsbuild();
  return { idle, grpc };
}

const out = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
const workdir = await mkdtemp(join(tmpdir(), 'krt-footprint-bench-'));
const probeDir = join(workdir, 'probe');
let system: System | undefined;
try {
  await mkdir(probeDir);
  // As JavaScript: a TypeScript probe would load Node's type stripping into every measured process (~18 MiB).
  const probeFile = join(probeDir, 'footprint-probe.mjs');
  await writeFile(probeFile, stripTypeScriptTypes(await readFile(join(REPO_ROOT, 'tools/benchmarks/src/footprint-probe.ts'), 'utf8')));
  const probeFlag = `--import=${pathToFileURL(probeFile).href}`;
  const snapshots = process.env.KRT_FOOTPRINT_HEAP_SNAPSHOTS;
  if (snapshots !== undefined && snapshots !== '') await writeFile(join(probeDir, 'heap-snapshots'), snapshots);
  process.env.KRT_E2E_NODE_OPTIONS = [process.env.KRT_E2E_NODE_OPTIONS ?? '', probeFlag].join(' ').trim();
  process.env.KRT_E2E_ENTRYPOINTS ??= 'bundle';
  const cluster = new Cluster(controlPlane.info);
  // runtimed's container as the chart sizes it by default: its NODE_OPTIONS carry the heap flags of that limit.
  const chartValues = parseYaml(
    await readFile(join(REPO_ROOT, 'deploy/charts/kruntimes/charts/controller-manager/values.yaml'), 'utf8'),
  ) as {
    runtimedResources: ResourceRequirements;
  };
  const runtimedResources = chartValues.runtimedResources;

  out(
    `Node ${process.version}, the apps from their ${process.env.KRT_E2E_ENTRYPOINTS === 'bundle' ? 'bundled builds (dist/bundle)' : 'TypeScript sources'}`,
  );
  const floors = await floorScripts(probeDir);
  out(
    `floors (rss anon, MB): an idle ES module ${await idleNode([floors.idle])} (with the bench's probe ${await idleNode([probeFlag, floors.idle])}); ` +
      `a bare @grpc/grpc-js server ${await idleNode([floors.grpc])}`,
  );
  out(`runtimed's resources (the chart's default): ${JSON.stringify(runtimedResources)}`);
  out('');

  out(`Part 1: one Pod of Runtime py (${String(OWN_RUNS)} function Runs Ready), plain Runs of another Runtime in the namespace`);
  out(
    'memory, MB: RSS, its anonymous part (RssAnon), V8 heapUsed, live heap (after a full GC); watch events: Run watch events received since the row before',
  );
  out(
    [
      'foreign'.padStart(7),
      'create s'.padStart(8),
      'runtimed rss anon heap live'.padEnd(27),
      'server rss anon heap live'.padEnd(25),
      'py workers'.padStart(10),
      'gateway rss anon heap live'.padEnd(26),
      'runtimed events'.padStart(15),
      'apiserver events/watches',
    ].join(' | '),
  );
  system = await System.start({ prefix: 'bench-footprint', cluster, runtimedResources });
  const first = system;
  await first.createRuntime('py', { language: 'python', replicas: 1, runs: OWN_RUNS + 1 });
  for (let k = 0; k < OWN_RUNS; k += 1) await first.createFunctionRun(`fn-${String(k)}`, 'py', HANDLER, 'main:handle');
  for (let k = 0; k < OWN_RUNS; k += 1) await first.waitReady(`fn-${String(k)}`);
  await settle(controlPlane.info);
  let created = 0;
  let previousEvents = new Map<number, number>();
  let apiBefore = await apiServerRunWatches(controlPlane.info);
  for (const target of FOREIGN_STEPS) {
    const t0 = performance.now();
    await foreignRuns(first, created, target);
    const seconds = (performance.now() - t0) / 1000;
    created = Math.max(created, target);
    await settle(controlPlane.info);
    const readings = await readAll(first, probeDir);
    const apiAfter = await apiServerRunWatches(controlPlane.info);
    const runtimeds = readings.filter((reading) => reading.role === 'runtimed');
    const events = runtimeds.map((reading) => reading.runWatchEvents - (previousEvents.get(reading.pid) ?? 0));
    previousEvents = new Map(runtimeds.map((reading) => [reading.pid, reading.runWatchEvents]));
    const workers = readings.filter((reading) => reading.role === 'runtime-server').map((reading) => reading.childrenRss);
    out(
      [
        String(target).padStart(7),
        seconds.toFixed(1).padStart(8),
        memory(readings, 'runtimed').padEnd(27),
        memory(readings, 'runtime-server').padEnd(25),
        mb(mean(workers)).padStart(10),
        memory(readings, 'gateway').padEnd(26),
        events.join(',').padStart(15),
        `${String(apiAfter.events - apiBefore.events)}/${String(apiAfter.watchers)}`,
      ].join(' | '),
    );
    apiBefore = apiAfter;
  }
  const watchCounts = (await readAll(first, probeDir))
    .map(
      (reading) =>
        `${reading.role} ${String(reading.runWatches)} watches, ${String(reading.runWatchEvents)} events, ${String(reading.runWatchBookmarks)} bookmarks`,
    )
    .join('; ');
  out(`Run watches in total per process: ${watchCounts}`);
  await first.stop();
  system = undefined;

  out('');
  out('Part 2: Runtime py with N idle Pods (no Runs), a fresh namespace; mean over the Pods (max RSS beside it)');
  out(
    [
      ' pods',
      'ready s',
      'runtimed rss anon heap live'.padEnd(36),
      'server rss anon heap live'.padEnd(36),
      'py workers',
      'gateway rss anon heap live',
    ].join(' | '),
  );
  system = await System.start({ prefix: 'bench-footprint-pods', cluster, runtimedResources });
  const second = system;
  for (const [index, pods] of POD_STEPS.entries()) {
    const t0 = performance.now();
    if (index === 0) await second.createRuntime('py', { language: 'python', replicas: pods });
    else await scale(second, 'py', pods);
    await waitPods(second, 'py', pods);
    const seconds = (performance.now() - t0) / 1000;
    await settle(controlPlane.info);
    await sleep(2_000);
    const readings = await readAll(second, probeDir);
    const workers = readings.filter((reading) => reading.role === 'runtime-server').map((reading) => reading.childrenRss);
    const total = readings
      .filter((reading) => reading.role !== 'gateway')
      .reduce((sum, reading) => sum + reading.vmRss + reading.childrenRss, 0);
    out(
      [
        String(pods).padStart(5),
        seconds.toFixed(1).padStart(7),
        memory(readings, 'runtimed').padEnd(36),
        memory(readings, 'runtime-server').padEnd(36),
        mb(mean(workers)).padStart(10),
        `${memory(readings, 'gateway')}; all Pods' processes ${mb(total).trim()} MB`,
      ].join(' | '),
    );
  }
} finally {
  await system?.stop();
  await controlPlane.stop();
  await rm(workdir, { recursive: true, force: true });
}
