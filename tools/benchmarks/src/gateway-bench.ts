/**
 * Benchmark (not a test): what each hop of the invoke path costs, measured in one run on
 * the same Runtime Pod.
 *   node tools/benchmarks/src/gateway-bench.ts [invocations=500] [streams=4] [rounds=4] [pods=1,4,8]
 * KRT_BENCH_SECTIONS=paths,pods (the default: both) chooses what is measured:
 * - paths: what each hop of one invoke costs, on one Runtime Pod (below);
 * - pods: the Pods dimension (pods-dimension.ts): the gateway path on Runtimes of each Pod
 *   count, at 1, 4 and 8 streams, with the share of peer hops and invocations per runtimed.
 *
 * A real control plane, the full system (controller-manager, scheduler, local-node
 * Runtime Pod with runtimed and the Python Runtime Server, the gateway as a child
 * process), `streams` function Runs with an empty handler on one Pod. Four paths:
 * - floor: HTTPS keep-alive -> a bare `node:https` server of this process -> the Runtime
 *   Server over one persistent gRPC channel, no checks at all (what Node can do with two hops);
 * - relays: the gateway path's structure with nothing else: HTTPS keep-alive -> a bare relay
 *   process -> gRPC over TLS -> a second bare relay process -> the Runtime Server (bare-relay.ts):
 *   the floor of three processes and these protocols on this machine;
 * - direct: the Runtime Server's gRPC API (RegisterFunction once, then InvokeFunction);
 * - runtimed: runtimed's gRPC port directly (FunctionRuntime.InvokeFunction over TLS with
 *   the caller's token, exactly as the gateway calls it: reviewed, routed, then the Runtime Server);
 * - gateway: HTTPS keep-alive -> gateway -> runtimed -> Runtime Server.
 * Each path runs `invocations` times, first with one stream (sequential, one Run), then
 * with `streams` Runs in parallel (v0.x allows one invocation in flight per Run), split
 * into `rounds` rounds whose order rotates, so no path always runs first or last.
 * Prints nearest-rank p50/p99 and invocations/s of each, the ratios to direct and the gap
 * to the floor, and the API server's requests while the gateway was measured beside an
 * idle window of the same length (background lease renewals), so what is per invoke shows,
 * and the gateway's memory: its RSS after the run and its peak (VmHWM), with the heap flags the
 * chart gives it (from its default memory limit, as nodeHeapOptions derives them) and its `maglev`
 * value (KRT_BENCH_GATEWAY_MAGLEV=true|false overrides it, to compare). The apps run from
 * their TypeScript sources; KRT_E2E_ENTRYPOINTS=bundle runs their bundled builds (as the
 * images ship them; `npx nx run-many -t bundle` first).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULTS } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { runtimedServerName } from '@kruntimes/gateway-core';
import { METADATA_KEYS, durationFromMillis, runtimeServerV1, runtimedV1 } from '@kruntimes/proto';
import { memoryQuantityBytes, nodeHeapOptions } from '@kruntimes/runtime-workload';
import {
  Cluster,
  ControlPlane,
  REPO_ROOT,
  apiServerRequestDelta,
  apiServerRequests,
  call,
  formatApiServerRequestDelta,
  formatLatencies,
  summarizeLatencies,
  testCa,
  testServerCert,
} from '@kruntimes/testing';
import type { ApiServerRequests, LatencySummary } from '@kruntimes/testing';
import { ChannelCredentials, Metadata, createChannel, createClient } from 'nice-grpc';
import { parse as parseYaml } from 'yaml';
import { measurePods } from './pods-dimension.ts';
import { relayHandler } from './relay-handler.ts';

const COUNT = Number(process.argv[2] ?? 500);
/** Function Runs invoked in parallel in the second measurement (one stream each: one invocation in flight per Run). */
const STREAMS = Number(process.argv[3] ?? 4);
const ROUNDS = Number(process.argv[4] ?? 4);
const POD_COUNTS = (process.argv[5] ?? '1,4,8').split(',').map(Number);
const SECTIONS = new Set((process.env.KRT_BENCH_SECTIONS ?? 'paths,pods').split(','));
const WARMUP = Math.min(50, COUNT);
const HANDLER = 'def handle(event, context):\n    return None\n';
const PAYLOAD = Buffer.from('{}');

type PathName = 'floor' | 'relays' | 'direct' | 'runtimed' | 'gateway';
const PATHS: readonly PathName[] = ['floor', 'relays', 'direct', 'runtimed', 'gateway'];
type One = (stream: number, i: number) => Promise<void>;

interface Result extends LatencySummary {
  perSecond: number;
}

/** Per path: its latencies and the wall time of its segments. */
class Tally {
  readonly latencies: number[] = [];
  seconds = 0;

  result(): Result {
    return { ...summarizeLatencies(this.latencies), perSecond: this.latencies.length / this.seconds };
  }
}

/** `count` invocations split over `streams` parallel sequential streams; adds to the tally. */
async function segment(count: number, streams: number, offset: number, one: One, tally: Tally): Promise<void> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let i = stream; i < count; i += streams) {
        const t0 = performance.now();
        await one(stream, offset + i);
        tally.latencies.push(performance.now() - t0);
      }
    }),
  );
  tally.seconds += (performance.now() - started) / 1000;
}

async function warmUp(streams: number, one: One): Promise<void> {
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let i = 0; i < WARMUP; i += 1) await one(stream, -1 - i);
    }),
  );
}

function at<T>(items: readonly T[], index: number): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no stream ${index}`);
  return item;
}

/** Adds what changed between two readings to `into`. */
function addDelta(into: Map<string, number>, before: ApiServerRequests, after: ApiServerRequests): void {
  for (const [kind, count] of apiServerRequestDelta(before, after).byKind) into.set(kind, (into.get(kind) ?? 0) + count);
}

const line = (what: PathName, s: Result): string => `  ${what.padEnd(8)} ${formatLatencies(s)}, ${s.perSecond.toFixed(0)} invocations/s`;

function report(title: string, results: Record<PathName, Result>): string {
  const { floor, relays, direct, runtimed, gateway } = results;
  const vs = (what: PathName, s: Result): string =>
    `  ${what.padEnd(8)} p50 ${(s.p50 / direct.p50).toFixed(2)}x direct (+${(s.p50 - direct.p50).toFixed(2)} ms), ` +
    `throughput ${(s.perSecond / direct.perSecond).toFixed(2)}x direct` +
    (what === 'floor'
      ? ''
      : `; gap to floor p50 +${(s.p50 - floor.p50).toFixed(2)} ms, throughput ${(s.perSecond / floor.perSecond).toFixed(2)}x floor`);
  return [
    title,
    ...PATHS.map((what) => line(what, results[what])),
    vs('floor', floor),
    vs('relays', relays),
    vs('runtimed', runtimed),
    vs('gateway', gateway),
    `  gateway - relays (what the checks, routing, logs and metrics cost over bare relays of the same shape): ` +
      `p50 +${(gateway.p50 - relays.p50).toFixed(2)} ms, throughput ${(gateway.perSecond / relays.perSecond).toFixed(2)}x relays`,
    `  gateway hop alone (gateway - runtimed): p50 +${(gateway.p50 - runtimed.p50).toFixed(2)} ms; ` +
      `runtimed hop alone (runtimed - direct): p50 +${(runtimed.p50 - direct.p50).toFixed(2)} ms`,
  ].join('\n');
}

/** A bare-relay.ts child process (stopped by `closers`); resolves with the port it listens on. */
async function startRelay(config: Record<string, unknown>, closers: (() => unknown)[]): Promise<number> {
  const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', join(REPO_ROOT, 'tools/benchmarks/src/bare-relay.ts')], {
    env: { PATH: process.env.PATH ?? '', KRT_BENCH_RELAY: JSON.stringify(config), NODE_OPTIONS: process.env.KRT_E2E_NODE_OPTIONS ?? '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  closers.push(() => child.kill('SIGTERM'));
  return new Promise<number>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      reject(new Error(`bare relay ${String(config.mode)} did not start within 30 s: ${output}`));
    }, 30_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const port = /^listening (\d+)$/m.exec(output)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      resolve(Number(port));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bare relay ${String(config.mode)} exited (${String(code)}): ${output}`));
    });
  });
}

/** The function Runs of the paths measurement, on one Runtime Pod, and who invokes them. */
interface Bench {
  current: System;
  gateway: NonNullable<System['gateway']>;
  runs: Awaited<ReturnType<System['waitReady']>>[];
  uids: string[];
  token: string;
  podIp: string;
  headers: Record<string, string>;
}

/** The Runtime Server client of the floor path; the relays path registers its functions through it too. */
interface Floor {
  one: One;
  ca: Awaited<ReturnType<typeof testCa>>;
  client: ReturnType<typeof createClient<typeof runtimeServerV1.RuntimeServerDefinition>>;
}

/** API server requests while the gateway was measured, summed over its segments. */
interface GatewayLoad {
  requests: Map<string, number>;
  seconds: number;
  invokes: number;
}

/** `STREAMS` function Runs on one Pod, ready, and a caller allowed to invoke them. */
async function setUpBench(current: System): Promise<Bench> {
  const gateway = current.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  // One Pod that holds every function Run of the bench.
  await current.createRuntime('py', { language: 'python', runs: STREAMS });
  for (let k = 0; k < STREAMS; k += 1) await current.createFunctionRun(`fn-${k}`, 'py', HANDLER, 'main:handle');
  const runs = await Promise.all(Array.from({ length: STREAMS }, (_, k) => current.waitReady(`fn-${k}`)));
  const uids = runs.map((run) => run.metadata.uid ?? '');
  await current.grantGetRuns('alice');
  const token = current.token('alice');
  const pod = await current.assignedPod('fn-0');
  const podIp = pod.status?.podIP ?? '';
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  return { current, gateway, runs, uids, token, podIp, headers };
}

/** gateway: HTTPS keep-alive, one connection per stream. */
function gatewayPath({ current, gateway, runs, uids, headers }: Bench, closers: (() => unknown)[]): One {
  const gatewayAgents = runs.map(() => new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem }));
  closers.push(() => {
    for (const agent of gatewayAgents) agent.destroy();
  });
  const urls = uids.map((uid) => current.invokeUrl('py', uid));
  return async (stream, i) => {
    const answer = await call(urls[stream] ?? '', {
      ca: gateway.caPem,
      headers: { ...headers, 'x-kruntime-invocation-id': `gateway-${stream}-${i}` },
      body: PAYLOAD,
      agent: at(gatewayAgents, stream),
    });
    if (answer.status !== 200) throw new Error(`gateway answered ${answer.status}: ${answer.body}`);
  };
}

/**
 * direct: the same Pod's Runtime Server, on its plaintext port (reachable from this host
 * only because the local node's Pods share its network namespace), own registrations.
 */
async function directPath({ runs, podIp }: Bench, closers: (() => unknown)[]): Promise<One> {
  await writeFile(join(workdir, 'main.py'), HANDLER);
  const serverChannel = createChannel(`${podIp}:${DEFAULTS.runtimeServerPort}`);
  closers.push(() => {
    serverChannel.close();
  });
  const server = createClient(runtimeServerV1.RuntimeServerDefinition, serverChannel);
  const registrations = await Promise.all(
    runs.map(() => server.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'main:handle', env: {} })),
  );
  closers.push(async () => {
    for (const registration of registrations) await server.unregisterFunction({ registrationId: registration.registrationId });
  });
  const registrationIds = registrations.map((registration) => registration.registrationId);
  return async (stream, i) => {
    await server.invokeFunction({
      registrationId: registrationIds[stream] ?? '',
      invocationId: `direct-${stream}-${i}`,
      payload: PAYLOAD,
      timeout: durationFromMillis(10_000),
    });
  };
}

/** runtimed: its gRPC port over TLS, the caller's token in the metadata, as the gateway calls it. */
function runtimedPath({ current, uids, token, podIp }: Bench, closers: (() => unknown)[]): One {
  const serverName = runtimedServerName(current.name, 'py');
  const runtimedChannel = createChannel(
    `${podIp}:${DEFAULTS.runtimedGrpcPort}`,
    ChannelCredentials.createSsl(Buffer.from(current.internalCa.certPem)),
    { 'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName },
  );
  closers.push(() => {
    runtimedChannel.close();
  });
  const runtimed = createClient(runtimedV1.FunctionRuntimeDefinition, runtimedChannel);
  return async (stream, i) => {
    const metadata = Metadata();
    metadata.set(METADATA_KEYS.authorization, `Bearer ${token}`);
    await runtimed.invokeFunction(
      {
        namespace: current.name,
        runtime: 'py',
        runUid: uids[stream] ?? '',
        invocationId: `runtimed-${stream}-${i}`,
        payload: PAYLOAD,
        timeout: durationFromMillis(10_000),
        peerHop: undefined,
      },
      { metadata },
    );
  };
}

/** floor: a bare HTTPS server that forwards to the same Runtime Server over one channel, no checks. */
async function floorPath({ runs, podIp, headers }: Bench, closers: (() => unknown)[]): Promise<Floor> {
  const ca = await testCa('gateway-bench-floor');
  const floorCert = await testServerCert(ca, { ips: ['127.0.0.1'] });
  const floorChannel = createChannel(`${podIp}:${DEFAULTS.runtimeServerPort}`);
  const floorClient = createClient(runtimeServerV1.RuntimeServerDefinition, floorChannel);
  const floorRegistrations = await Promise.all(
    runs.map(() => floorClient.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'main:handle', env: {} })),
  );
  const floorServer = createServer(
    { cert: floorCert.certPem, key: floorCert.keyPem },
    relayHandler((request) =>
      floorClient.invokeFunction({
        registrationId: floorRegistrations[Number(request.target)]?.registrationId ?? '',
        invocationId: request.invocationId,
        payload: request.payload,
        timeout: durationFromMillis(10_000),
      }),
    ),
  );
  await new Promise<void>((resolve) => floorServer.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    floorServer.closeAllConnections();
    await new Promise((resolve) => floorServer.close(resolve));
    for (const registration of floorRegistrations) await floorClient.unregisterFunction({ registrationId: registration.registrationId });
    floorChannel.close();
  });
  const floorUrl = `https://127.0.0.1:${(floorServer.address() as AddressInfo).port}`;
  const floorAgents = runs.map(() => new Agent({ keepAlive: true, maxSockets: 1, ca: ca.certPem }));
  closers.push(() => {
    for (const agent of floorAgents) agent.destroy();
  });
  const one: One = async (stream, i) => {
    const answer = await call(`${floorUrl}/${stream}`, {
      ca: ca.certPem,
      headers: { ...headers, 'x-kruntime-invocation-id': `floor-${stream}-${i}` },
      body: PAYLOAD,
      agent: at(floorAgents, stream),
    });
    if (answer.status !== 200) throw new Error(`floor answered ${answer.status}: ${answer.body}`);
  };
  return { one, ca, client: floorClient };
}

/** relays: two bare relay processes with the gateway path's protocols, own registrations. */
async function relaysPath({ runs, podIp, headers }: Bench, { ca, client: floorClient }: Floor, closers: (() => unknown)[]): Promise<One> {
  const relayRegistrations = await Promise.all(
    runs.map(() => floorClient.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'main:handle', env: {} })),
  );
  closers.push(async () => {
    for (const registration of relayRegistrations) await floorClient.unregisterFunction({ registrationId: registration.registrationId });
  });
  const relayCert = await testServerCert(ca, { dns: ['localhost'], ips: ['127.0.0.1'] });
  const grpcRelay = await startRelay(
    {
      mode: 'grpc',
      certPem: relayCert.certPem,
      keyPem: relayCert.keyPem,
      upstream: `${podIp}:${DEFAULTS.runtimeServerPort}`,
      registrations: Object.fromEntries(relayRegistrations.map((registration, k) => [`relay-${String(k)}`, registration.registrationId])),
    },
    closers,
  );
  const httpsRelay = await startRelay(
    {
      mode: 'https',
      certPem: relayCert.certPem,
      keyPem: relayCert.keyPem,
      upstreamCaPem: ca.certPem,
      upstream: `127.0.0.1:${String(grpcRelay)}`,
    },
    closers,
  );
  const relayAgents = runs.map(() => new Agent({ keepAlive: true, maxSockets: 1, ca: ca.certPem }));
  closers.push(() => {
    for (const agent of relayAgents) agent.destroy();
  });
  return async (stream, i) => {
    const answer = await call(`https://127.0.0.1:${String(httpsRelay)}/relay-${String(stream)}`, {
      ca: ca.certPem,
      headers: { ...headers, 'x-kruntime-invocation-id': `relays-${stream}-${i}` },
      body: PAYLOAD,
      agent: at(relayAgents, stream),
    });
    if (answer.status !== 200) throw new Error(`relays answered ${answer.status}: ${answer.body}`);
  };
}

/** Every path with `streams` streams, warmed up, in `ROUNDS` rounds of rotating order; the gateway's segments add to `load`. */
async function measure(paths: Record<PathName, One>, streams: number, load: GatewayLoad): Promise<Record<PathName, Result>> {
  for (const what of PATHS) await warmUp(streams, paths[what]);
  const tallies = { floor: new Tally(), relays: new Tally(), direct: new Tally(), runtimed: new Tally(), gateway: new Tally() };
  const perRound = Math.ceil(COUNT / ROUNDS);
  for (let round = 0; round < ROUNDS; round += 1) {
    const count = Math.min(perRound, COUNT - round * perRound);
    for (let k = 0; k < PATHS.length; k += 1) {
      const what = PATHS[(round + k) % PATHS.length] ?? 'gateway';
      if (what !== 'gateway') {
        await segment(count, streams, round * perRound, paths[what], tallies[what]);
        continue;
      }
      const before = await apiServerRequests(controlPlane.info);
      const t0 = performance.now();
      await segment(count, streams, round * perRound, paths[what], tallies[what]);
      load.seconds += (performance.now() - t0) / 1000;
      load.invokes += count;
      addDelta(load.requests, before, await apiServerRequests(controlPlane.info));
    }
  }
  return {
    floor: tallies.floor.result(),
    relays: tallies.relays.result(),
    direct: tallies.direct.result(),
    runtimed: tallies.runtimed.result(),
    gateway: tallies.gateway.result(),
  };
}

/** The gateway's own share (its overhead histogram: total minus the upstream call, warm-ups included), and its memory. */
async function gatewayFootprint(gateway: Bench['gateway']): Promise<{ overheadMs: number; statusMb: (field: string) => string }> {
  const exposition = await (await fetch(gateway.metricsUrl)).text();
  const sample = (name: string): number =>
    Number(new RegExp(`^${name}\\{route="functions"\\} (\\S+)$`, 'm').exec(exposition)?.[1] ?? Number.NaN);
  const overheadMs = (sample('kruntimes_gateway_overhead_seconds_sum') / sample('kruntimes_gateway_overhead_seconds_count')) * 1000;
  const status = await readFile(`/proc/${String(gateway.pid)}/status`, 'utf8');
  const statusMb = (field: string): string => (Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) / 1024).toFixed(0);
  return { overheadMs, statusMb };
}

/** The paths of one invoke compared on one Runtime Pod; returns the report. */
async function measurePaths(current: System, closers: (() => unknown)[]): Promise<string> {
  const bench = await setUpBench(current);
  const viaGateway = gatewayPath(bench, closers);
  const direct = await directPath(bench, closers);
  const viaRuntimed = runtimedPath(bench, closers);
  const floor = await floorPath(bench, closers);
  const viaRelays = await relaysPath(bench, floor, closers);
  const paths: Record<PathName, One> = { floor: floor.one, relays: viaRelays, direct, runtimed: viaRuntimed, gateway: viaGateway };

  const load: GatewayLoad = { requests: new Map(), seconds: 0, invokes: 0 };
  const sequential = await measure(paths, 1, load);
  const parallel = await measure(paths, STREAMS, load);
  // The background: the same length of time with nothing invoked.
  const idleBefore = await apiServerRequests(controlPlane.info);
  await sleep(load.seconds * 1000);
  const idle = apiServerRequestDelta(idleBefore, await apiServerRequests(controlPlane.info));
  const invoking = apiServerRequestDelta(new Map(), load.requests);
  const { overheadMs, statusMb } = await gatewayFootprint(bench.gateway);

  return [
    `empty Python handler, ${COUNT} invocations per path and measurement (after ${WARMUP} warm-up per stream), ` +
      `${ROUNDS} rounds in rotating order, one Runtime Pod`,
    'floor    = HTTPS keep-alive -> bare node:https server (no checks) -> Runtime Server (one gRPC channel)',
    'relays   = HTTPS keep-alive -> bare relay process -> gRPC over TLS -> bare relay process -> Runtime Server (the path without its checks)',
    'direct   = Runtime Server gRPC',
    "runtimed = runtimed's gRPC port (TLS, the caller's token reviewed, cached) -> Runtime Server",
    'gateway  = HTTPS keep-alive -> gateway -> runtimed -> Runtime Server',
    report('1 stream (sequential, one Run):', sequential),
    report(`${STREAMS} streams (one Run each, in parallel):`, parallel),
    `the gateway's own time per invoke (its overhead histogram, mean): ${overheadMs.toFixed(2)} ms`,
    `API server requests during the ${load.invokes} measured gateway invokes (${load.seconds.toFixed(1)} s): ` +
      formatApiServerRequestDelta(invoking),
    `API server requests in an idle window of the same length (background: leases, watches): ${formatApiServerRequestDelta(idle)}`,
    `per warm invoke (during minus idle, per invoke): ${((invoking.total - idle.total) / load.invokes).toFixed(3)}`,
    `the gateway's memory (${process.env.KRT_E2E_ENTRYPOINTS === 'bundle' ? 'bundled build' : 'TypeScript sources'}): ` +
      `RSS ${statusMb('VmRSS')} MB (anonymous ${statusMb('RssAnon')} MB) after the run, peak ${statusMb('VmHWM')} MB; ` +
      `NODE_OPTIONS ${gatewayNodeOptions} (the chart's, from its ${gatewayValues.resources.limits.memory} limit); ` +
      `Maglev ${maglev ? 'on' : 'off (node --no-maglev)'}${process.env.KRT_BENCH_GATEWAY_MAGLEV === undefined ? " (the chart's maglev value)" : ' (KRT_BENCH_GATEWAY_MAGLEV)'}`,
    '',
  ].join('\n');
}

// The gateway's heap flags as the chart sets them from its default memory limit.
const gatewayValues = parseYaml(await readFile(join(REPO_ROOT, 'deploy/charts/kruntimes/charts/runtime-gateway/values.yaml'), 'utf8')) as {
  resources: { limits: { memory: string } };
  maglev: boolean;
};
const gatewayNodeOptions = nodeHeapOptions(memoryQuantityBytes(gatewayValues.resources.limits.memory) ?? Number.NaN);
// The chart's `maglev` value (its command line), or KRT_BENCH_GATEWAY_MAGLEV=true|false to compare.
const maglev = process.env.KRT_BENCH_GATEWAY_MAGLEV === undefined ? gatewayValues.maglev : process.env.KRT_BENCH_GATEWAY_MAGLEV === 'true';
const gatewayNodeFlags = maglev ? [] : ['--no-maglev'];
const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
const closers: (() => unknown)[] = [];
const workdir = await mkdtemp(join(tmpdir(), 'krt-gateway-bench-'));
try {
  system = await System.start({ prefix: 'bench-gateway', cluster: new Cluster(controlPlane.info), gatewayNodeOptions, gatewayNodeFlags });
  if (SECTIONS.has('paths')) process.stdout.write(await measurePaths(system, closers));
  if (SECTIONS.has('pods')) {
    const report = await measurePods({ system, podCounts: POD_COUNTS, count: COUNT, rounds: ROUNDS, warmup: WARMUP });
    process.stdout.write(`${report}\n`);
  }
} finally {
  for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
  await system?.stop();
  await controlPlane.stop();
  await rm(workdir, { recursive: true, force: true });
}
