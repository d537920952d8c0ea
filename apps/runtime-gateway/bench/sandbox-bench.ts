/**
 * Benchmark (not a test): an agent sandbox's tool call through the TypeScript session
 * (@kruntimes/sdk's Sandbox) against the raw gateway request, and sandbox create -> Ready.
 *   node apps/runtime-gateway/bench/sandbox-bench.ts [calls=400] [rounds=4] [sandboxes=8]
 *
 * A real control plane, the full system (as the gateway bench), a Python Runtime with
 * `runs: 1`. Tool calls go to one Ready sandbox Run (the stock handler kruntimes_sandbox):
 * - raw: the same tool payload as a bare HTTPS POST over one keep-alive connection (the
 *   gateway bench's gateway path);
 * - session: Sandbox.call (one reused keep-alive connection, payload checks, typed errors).
 * Both with `list_files` (the handler's cheapest tool, so that the SDK's own cost shows),
 * call by call alternately, in `rounds` rounds whose first path alternates; then `exec true` through the session (a process
 * per call). The session's own cost is session p50 - raw p50. Then `sandboxes` sandboxes one
 * after another, each started (Runtime read, create, watch until Ready) and closed (deleted,
 * watched until gone): create -> Ready and close p50.
 */
import { Agent } from 'node:https';
import { join } from 'node:path';
import { API_GROUP, RUN_PLURAL, RUNTIME_PLURAL, RUNTIME_USE_VERB } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { Sandbox } from '@kruntimes/sdk';
import type { SandboxOptions } from '@kruntimes/sdk';
import { Cluster, ControlPlane, REPO_ROOT, call, formatLatencies, kubeConfigFor, summarizeLatencies } from '@kruntimes/testing';

const CALLS = Number(process.argv[2] ?? 400);
const ROUNDS = Number(process.argv[3] ?? 4);
const SANDBOXES = Number(process.argv[4] ?? 8);
const WARMUP = Math.min(50, CALLS);
const TOOL = { tool: 'list_files', path: '.' };
const AGENT_RULES = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['create', 'get', 'list', 'watch', 'delete', 'patch'] },
  { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: ['get', RUNTIME_USE_VERB] },
];

async function timed(samples: number[], one: () => Promise<unknown>): Promise<void> {
  const t0 = performance.now();
  await one();
  samples.push(performance.now() - t0);
}

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
const closers: (() => Promise<unknown>)[] = [];
try {
  system = await System.start({ prefix: 'bench-sandbox', cluster: new Cluster(controlPlane.info) });
  const current = system;
  const gateway = current.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  await current.createRuntime('sandbox', { language: 'python', runs: 1 });
  await current.waitRuntimeReady('sandbox', 1);
  const token = await current.serviceAccountToken('agent', AGENT_RULES);
  const { server, caPem } = current.cluster.info;
  const options: SandboxOptions = {
    kubeConfig: kubeConfigFor({ server, caPem, user: 'agent', token }),
    namespace: current.name,
    runtime: 'sandbox',
    exclusive: true,
    // The Runs' endpoints name the in-cluster gateway Service: reached at its loopback address.
    gateway: { url: gateway.url, caPem: gateway.caPem },
  };

  const sandbox = new Sandbox(options);
  closers.push(() => sandbox.close());
  await sandbox.start();
  const url = current.invokeUrl('sandbox', sandbox.run?.metadata.uid ?? '');
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem });
  closers.push(() => {
    agent.destroy();
    return Promise.resolve();
  });
  const body = Buffer.from(JSON.stringify(TOOL));
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const raw = async (): Promise<void> => {
    const answer = await call(url, { ca: gateway.caPem, headers, body, agent });
    if (answer.status !== 200) throw new Error(`raw gateway request answered ${String(answer.status)}`);
  };
  const session = async (): Promise<void> => {
    await sandbox.call(TOOL);
  };

  for (let i = 0; i < WARMUP; i += 1) {
    await raw();
    await session();
  }
  const latencies = { raw: [] as number[], session: [] as number[] };
  // Call by call, the two paths alternate (and which goes first alternates by round): a
  // busy machine's slow moments fall on both alike.
  const perRound = Math.ceil(CALLS / ROUNDS);
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? (['raw', 'session'] as const) : (['session', 'raw'] as const);
    for (let i = 0; i < perRound; i += 1) for (const path of order) await timed(latencies[path], path === 'raw' ? raw : session);
  }
  const exec: number[] = [];
  for (let i = 0; i < Math.min(CALLS, 200); i += 1) await timed(exec, () => sandbox.exec('true'));
  await sandbox.close();

  const ready: number[] = [];
  const close: number[] = [];
  for (let i = 0; i < SANDBOXES; i += 1) {
    const next = new Sandbox(options);
    closers.push(() => next.close());
    await timed(ready, () => next.start());
    await timed(close, () => next.close());
  }

  const rawSummary = summarizeLatencies(latencies.raw);
  const sessionSummary = summarizeLatencies(latencies.session);
  process.stdout.write(
    [
      '',
      `sandbox bench: ${String(CALLS)} tool calls per path alternating call by call in ${String(ROUNDS)} rounds, one sandbox Run (runs: 1), list_files`,
      `  raw      ${formatLatencies(rawSummary)}   (HTTPS keep-alive POST -> gateway -> runtimed -> Runtime Server -> kruntimes_sandbox)`,
      `  session  ${formatLatencies(sessionSummary)}   (Sandbox.call over its one keep-alive connection)`,
      `  the session's own cost: p50 +${(sessionSummary.p50 - rawSummary.p50).toFixed(3)} ms, p99 +${(sessionSummary.p99 - rawSummary.p99).toFixed(3)} ms`,
      `  exec true (a process per call) through the session: ${formatLatencies(summarizeLatencies(exec))}`,
      `sandbox create -> Ready (Runtime read, create, watch until Ready), ${String(SANDBOXES)} one after another: ${formatLatencies(summarizeLatencies(ready))}`,
      `sandbox close (delete, watch until gone): ${formatLatencies(summarizeLatencies(close))}`,
      '',
    ].join('\n'),
  );
} finally {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await system?.stop();
  await controlPlane.stop();
}
