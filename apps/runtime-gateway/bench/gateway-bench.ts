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
 * Prints p50/p99 latency and invocations/s of both and their ratios.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS } from '@kruntimes/api';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the benchmark starts its own control plane with the test harness
import { Cluster, ControlPlane, REPO_ROOT } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the full-system environment of the integration tests, reused as is
import { System } from '../../../e2e/src/system.ts';
// eslint-disable-next-line @nx/enforce-module-boundaries -- its HTTPS client, reused as is
import { call } from '../../../e2e/src/https-client.ts';

const COUNT = Number(process.argv[2] ?? 500);
const WARMUP = Math.min(50, COUNT);
const HANDLER = 'def handle(event, context):\n    return None\n';

interface Summary {
  p50: number;
  p99: number;
  perSecond: number;
}

async function measure(count: number, one: (i: number) => Promise<void>): Promise<Summary> {
  for (let i = 0; i < WARMUP; i += 1) await one(-1 - i);
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i += 1) {
    const t0 = performance.now();
    await one(i);
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN;
  return { p50: pct(50), p99: pct(99), perSecond: count / seconds };
}

const line = (what: string, s: Summary): string => `${what}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, ${s.perSecond.toFixed(0)} invocations/s`;

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
const workdir = await mkdtemp(join(tmpdir(), 'krt-gateway-bench-'));
try {
  system = await System.start({ prefix: 'bench-gateway', cluster: new Cluster(controlPlane.info) });
  const current = system;
  const gateway = current.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  await current.createRuntime('py', { language: 'python' });
  await current.createFunctionRun('fn', 'py', HANDLER, 'main:handle');
  const run = await current.waitReady('fn');
  await current.grantGetRuns('alice', 'fn');
  const token = current.token('alice');

  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem });
  const url = current.invokeUrl('py', run.metadata.uid ?? '');
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const viaGateway = await measure(COUNT, async (i) => {
    const answer = await call(url, { ca: gateway.caPem, headers: { ...headers, 'x-kruntime-invocation-id': `bench-${i}` }, body: '{}', agent });
    if (answer.status !== 200) throw new Error(`gateway answered ${answer.status}: ${answer.body}`);
  });
  agent.destroy();
  // The gateway's own share (its overhead histogram: total minus the upstream call), warm-up included.
  const exposition = await (await fetch(gateway.metricsUrl)).text();
  const sample = (name: string): number => Number(new RegExp(`^${name}\\{route="functions"\\} (\\S+)$`, 'm').exec(exposition)?.[1] ?? Number.NaN);
  const overheadMs = (sample('kruntimes_gateway_overhead_seconds_sum') / sample('kruntimes_gateway_overhead_seconds_count')) * 1000;

  // The same Pod's Runtime Server, on its plaintext port (reachable from this host only
  // because the local node's Pods share its network namespace).
  const pod = await current.core.readNamespacedPod({ namespace: current.name, name: run.status?.assignedPod ?? '' });
  await writeFile(join(workdir, 'main.py'), HANDLER);
  const channel = createChannel(`${pod.status?.podIP ?? ''}:${DEFAULTS.runtimeServerPort}`);
  const client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
  const { registrationId } = await client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'main:handle', env: {} });
  const direct = await measure(COUNT, async (i) => {
    await client.invokeFunction({ registrationId, invocationId: `direct-${i}`, payload: Buffer.from('{}'), timeout: durationFromMillis(10_000) });
  });
  await client.unregisterFunction({ registrationId });
  channel.close();

  process.stdout.write(`${COUNT} sequential invocations of an empty Python handler on one Runtime Pod (after ${WARMUP} warm-up):\n`);
  process.stdout.write(`${line('through the gateway (HTTPS -> runtimed TLS gRPC -> Runtime Server)', viaGateway)}\n`);
  process.stdout.write(`${line('direct Runtime Server gRPC', direct)}\n`);
  process.stdout.write(`the gateway's own time per invoke (its overhead histogram, mean): ${overheadMs.toFixed(2)} ms; the rest is runtimed, TLS and the client\n`);
  process.stdout.write(
    `ratio gateway / direct: p50 ${(viaGateway.p50 / direct.p50).toFixed(2)}x, p99 ${(viaGateway.p99 / direct.p99).toFixed(2)}x, throughput ${(viaGateway.perSecond / direct.perSecond).toFixed(2)}x\n`,
  );
} finally {
  await system?.stop();
  await controlPlane.stop();
  await rm(workdir, { recursive: true, force: true });
}
