/**
 * Benchmark (not a test): what the invoke path through the gateway costs compared with
 * calling the Runtime Server directly, measured in one run on the same Runtime Pod.
 *   node apps/runtime-gateway/bench/gateway-bench.ts [invocations=500]
 *
 * A real control plane, the full system (controller-manager, scheduler, local-node
 * Runtime Pod with runtimed and the Python Runtime Server, the gateway as a child
 * process), one function Run with an empty handler. Then, sequentially (v0.x allows one
 * invocation in flight per Run):
 * - gateway: N HTTPS invokes on one keep-alive connection (gateway -> runtimed TLS gRPC
 *   with the caller's token, authorized by runtimed with its cached review -> Runtime Server);
 * - direct: RegisterFunction once on the same Pod's Runtime Server, then N InvokeFunction.
 * Then the same with S function Runs on the Pod invoked in parallel (one stream each).
 * Prints p50/p99 latency and invocations/s of both and their ratios.
 *   node apps/runtime-gateway/bench/gateway-bench.ts [invocations=500] [streams=4]
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS } from '@kruntimes/api';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { System } from '@kruntimes/e2e';
import { Cluster, ControlPlane, REPO_ROOT, call } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';

const COUNT = Number(process.argv[2] ?? 500);
/** Function Runs invoked in parallel in the second measurement (one stream each: one invocation in flight per Run). */
const STREAMS = Number(process.argv[3] ?? 4);
const WARMUP = Math.min(50, COUNT);
const HANDLER = 'def handle(event, context):\n    return None\n';

interface Summary {
  p50: number;
  p99: number;
  perSecond: number;
}

/** `count` invocations split over `streams` parallel sequential streams; `one(stream, i)` is one invocation. */
async function measure(count: number, streams: number, one: (stream: number, i: number) => Promise<void>): Promise<Summary> {
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let i = 0; i < WARMUP; i += 1) await one(stream, -1 - i);
    }),
  );
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let i = stream; i < count; i += streams) {
        const t0 = performance.now();
        await one(stream, i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN;
  return { p50: pct(50), p99: pct(99), perSecond: count / seconds };
}

const line = (what: string, s: Summary): string =>
  `  ${what}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, ${s.perSecond.toFixed(0)} invocations/s`;
const ratios = (gateway: Summary, direct: Summary): string =>
  `  ratio gateway / direct: p50 ${(gateway.p50 / direct.p50).toFixed(2)}x, p99 ${(gateway.p99 / direct.p99).toFixed(2)}x, throughput ${(gateway.perSecond / direct.perSecond).toFixed(2)}x`;

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
const workdir = await mkdtemp(join(tmpdir(), 'krt-gateway-bench-'));
try {
  system = await System.start({ prefix: 'bench-gateway', cluster: new Cluster(controlPlane.info) });
  const current = system;
  const gateway = current.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  // One Pod that holds every function Run of the bench.
  await current.createRuntime('py', { language: 'python', runs: STREAMS });
  for (let k = 0; k < STREAMS; k += 1) await current.createFunctionRun(`fn-${k}`, 'py', HANDLER, 'main:handle');
  const runs = await Promise.all(Array.from({ length: STREAMS }, (_, k) => current.waitReady(`fn-${k}`)));
  await current.grantGetRuns('alice');
  const token = current.token('alice');

  const agents = runs.map(() => new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem }));
  const urls = runs.map((run) => current.invokeUrl('py', run.metadata.uid ?? ''));
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const viaGateway = async (stream: number, i: number): Promise<void> => {
    const agent = agents[stream];
    if (agent === undefined) throw new Error(`no stream ${stream}`);
    const answer = await call(urls[stream] ?? '', {
      ca: gateway.caPem,
      headers: { ...headers, 'x-kruntime-invocation-id': `bench-${stream}-${i}` },
      body: '{}',
      agent,
    });
    if (answer.status !== 200) throw new Error(`gateway answered ${answer.status}: ${answer.body}`);
  };

  // The same Pod's Runtime Server, on its plaintext port (reachable from this host only
  // because the local node's Pods share its network namespace).
  const pod = await current.assignedPod('fn-0');
  await writeFile(join(workdir, 'main.py'), HANDLER);
  const channel = createChannel(`${pod.status?.podIP ?? ''}:${DEFAULTS.runtimeServerPort}`);
  const client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
  const registrations = await Promise.all(
    runs.map(() => client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'main:handle', env: {} })),
  );
  const direct = async (stream: number, i: number): Promise<void> => {
    await client.invokeFunction({
      registrationId: registrations[stream]?.registrationId ?? '',
      invocationId: `direct-${stream}-${i}`,
      payload: Buffer.from('{}'),
      timeout: durationFromMillis(10_000),
    });
  };

  const sequentialGateway = await measure(COUNT, 1, viaGateway);
  const sequentialDirect = await measure(COUNT, 1, direct);
  const parallelGateway = await measure(COUNT, STREAMS, viaGateway);
  const parallelDirect = await measure(COUNT, STREAMS, direct);
  // The gateway's own share (its overhead histogram: total minus the upstream call), warm-ups included.
  const exposition = await (await fetch(gateway.metricsUrl)).text();
  const sample = (name: string): number =>
    Number(new RegExp(`^${name}\\{route="functions"\\} (\\S+)$`, 'm').exec(exposition)?.[1] ?? Number.NaN);
  const overheadMs = (sample('kruntimes_gateway_overhead_seconds_sum') / sample('kruntimes_gateway_overhead_seconds_count')) * 1000;
  for (const agent of agents) agent.destroy();
  for (const registration of registrations) await client.unregisterFunction({ registrationId: registration.registrationId });
  channel.close();

  process.stdout.write(
    `empty Python handler, ${COUNT} invocations per measurement (after ${WARMUP} warm-up per stream), one Runtime Pod\n`,
  );
  process.stdout.write(
    'gateway = HTTPS keep-alive -> gateway -> runtimed (TLS gRPC, token reviewed, cached) -> Runtime Server; direct = Runtime Server gRPC\n',
  );
  process.stdout.write('1 stream (sequential, one Run):\n');
  process.stdout.write(
    `${line('gateway', sequentialGateway)}\n${line('direct ', sequentialDirect)}\n${ratios(sequentialGateway, sequentialDirect)}\n`,
  );
  process.stdout.write(`${STREAMS} streams (one Run each, in parallel):\n`);
  process.stdout.write(
    `${line('gateway', parallelGateway)}\n${line('direct ', parallelDirect)}\n${ratios(parallelGateway, parallelDirect)}\n`,
  );
  process.stdout.write(`the gateway's own time per invoke (its overhead histogram, mean): ${overheadMs.toFixed(2)} ms\n`);
} finally {
  await system?.stop();
  await controlPlane.stop();
  await rm(workdir, { recursive: true, force: true });
}
