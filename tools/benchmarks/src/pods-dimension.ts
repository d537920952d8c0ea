/**
 * The gateway bench's Pods dimension: one Runtime per Pod count (1, 4, 8 by
 * default), each with 8 function Runs spread over its Pods, invoked through the gateway
 * at 1 stream (one Run), 4 streams (four Runs) and 8 streams (all eight Runs at once), in
 * rounds whose Runtime order rotates, so no Pod count always runs first. Every runtimed's
 * own counter (`kruntimes_runtimed_invocations_total`, by port) is read around the measured
 * segments only (warm-ups excluded): invokes that took a peer hop (arrived on a peer port)
 * and invocations each runtimed received from the gateway (its gRPC port), which shows how
 * even the spread is.
 */
import { readFile, readdir } from 'node:fs/promises';
import { Agent } from 'node:https';
import { DEFAULTS } from '@kruntimes/api';
import type { System } from '@kruntimes/e2e';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { isPodReady } from '@kruntimes/controller-runtime';
import { currentPhase } from '@kruntimes/run-state';
import { call, formatLatencies, processCpuSeconds, summarizeLatencies, waitFor } from '@kruntimes/testing';

const HANDLER = 'def handle(event, context):\n    return None\n';
const PAYLOAD = Buffer.from('{}');
/** Function Runs per Runtime: the widest measurement invokes all of them at once. */
const RUNS_PER_RUNTIME = 8;
const STREAM_COUNTS = [1, 4, RUNS_PER_RUNTIME] as const;
/** Eight Pods starting on a shared, busy machine: far longer than a test's wait. */
const SET_UP_WAIT = { timeoutMs: 900_000, intervalMs: 1_000 };

export interface PodsDimensionOptions {
  system: System;
  podCounts: readonly number[];
  /** Measured invocations per Pod count and stream count. */
  count: number;
  rounds: number;
  warmup: number;
}

/** One runtimed's counters: invocations by port. */
interface RuntimedCounts {
  pod: string;
  grpc: number;
  peer: number;
}

interface Subject {
  pods: number;
  runtime: string;
  urls: string[];
  agents: Agent[];
  metricsUrls: { pod: string; url: string }[];
  /** How many of the Runs the scheduler placed on each Pod (the owners' share of the work). */
  runsPerPod: number[];
}

interface Tally {
  latencies: number[];
  /** Answers other than 200 (e.g. a 503 while a loaded Pod's readiness flapped), by status: counted, not timed. */
  failures: Map<number, number>;
  seconds: number;
  /** Per runtimed (by Pod name): what the measured segments added to its counters. */
  perRuntimed: Map<string, RuntimedCounts>;
  /** CPU seconds the measured segments cost, by the role of the process (this bench's descendants only). */
  cpu: Map<Role, number>;
}

/** What a process of the invoke path is, from its command line. */
type Role = 'gateway' | 'runtimed' | 'runtime server' | 'python worker';
const ROLES: readonly [Role, RegExp][] = [
  ['gateway', /runtime-gateway/],
  ['runtimed', /runtimed/],
  ['runtime server', /runtime-server-python\/src\/main|runtime-server-python\.m?js/],
  ['python worker', /krt_worker\.py/],
];

/**
 * CPU seconds so far of every descendant of this process by role: where an invoke's CPU
 * goes, and which role's share grows with the number of Pods.
 */
async function cpuByRole(): Promise<Map<Role, number>> {
  const parents = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parents.set(Number(entry), ppid);
    commands.set(Number(entry), (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' '));
  }
  const descends = (pid: number): boolean => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops += 1) {
      if (at === process.pid) return true;
      at = parents.get(at) ?? 0;
    }
    return false;
  };
  const totals = new Map<Role, number>();
  for (const [pid, command] of commands) {
    const role = ROLES.find(([, pattern]) => pattern.test(command))?.[0];
    if (role === undefined || pid === process.pid || !descends(pid)) continue;
    const seconds = await processCpuSeconds(pid).catch(() => 0);
    totals.set(role, (totals.get(role) ?? 0) + seconds);
  }
  return totals;
}

function addCpu(into: Map<Role, number>, before: Map<Role, number>, after: Map<Role, number>): void {
  for (const [role, seconds] of after) into.set(role, (into.get(role) ?? 0) + seconds - (before.get(role) ?? 0));
}

const INVOCATIONS = /^kruntimes_runtimed_invocations_total\{([^}]*)\} (\S+)$/gm;

/** Sums `kruntimes_runtimed_invocations_total` of one exposition by its `port` label. */
function invocationsByPort(exposition: string): { grpc: number; peer: number } {
  const counts = { grpc: 0, peer: 0 };
  for (const [, labels = '', value = '0'] of exposition.matchAll(INVOCATIONS)) {
    if (labels.includes('port="grpc"')) counts.grpc += Number(value);
    else if (labels.includes('port="peer"')) counts.peer += Number(value);
  }
  return counts;
}

async function readCounts(subject: Subject): Promise<RuntimedCounts[]> {
  return Promise.all(subject.metricsUrls.map(async ({ pod, url }) => ({ pod, ...invocationsByPort(await (await fetch(url)).text()) })));
}

function addCounts(into: Map<string, RuntimedCounts>, before: RuntimedCounts[], after: RuntimedCounts[]): void {
  for (const now of after) {
    const then = before.find((counts) => counts.pod === now.pod) ?? { grpc: 0, peer: 0 };
    const sum = into.get(now.pod) ?? { pod: now.pod, grpc: 0, peer: 0 };
    sum.grpc += now.grpc - then.grpc;
    sum.peer += now.peer - then.peer;
    into.set(now.pod, sum);
  }
}

/** One invoke; its HTTP status. */
async function invokeOnce(system: System, subject: Subject, stream: number, id: string): Promise<number> {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const answer = await call(subject.urls[stream] ?? '', {
    ca: gateway.caPem,
    headers: {
      authorization: `Bearer ${system.token('alice')}`,
      'content-type': 'application/json',
      'x-kruntime-invocation-id': id,
    },
    body: PAYLOAD,
    ...(subject.agents[stream] === undefined ? {} : { agent: subject.agents[stream] }),
  });
  if (answer.status !== 200 && answer.status !== 503) throw new Error(`gateway answered ${answer.status}: ${answer.body}`);
  return answer.status;
}

/** `count` invocations over `streams` parallel sequential streams (one Run each). */
async function segment(system: System, subject: Subject, streams: number, count: number, tag: string, tally?: Tally): Promise<void> {
  await Promise.all(
    Array.from({ length: streams }, async (_, stream) => {
      for (let i = stream; i < count; i += streams) {
        const t0 = performance.now();
        const status = await invokeOnce(system, subject, stream, `${tag}-${stream}-${i}`);
        if (status === 200) tally?.latencies.push(performance.now() - t0);
        else tally?.failures.set(status, (tally.failures.get(status) ?? 0) + 1);
      }
    }),
  );
}

async function setUp(system: System, pods: number): Promise<Subject> {
  const runtime = `pods-${pods}`;
  // Capacity for every Run on one Pod; the scheduler spreads them (most free capacity first).
  await system.createRuntime(runtime, { language: 'python', replicas: pods, runs: RUNS_PER_RUNTIME });
  const listPods = async () =>
    (await system.core.listNamespacedPod({ namespace: system.name, labelSelector: podLabelSelector(runtime) })).items;
  await waitFor(
    `${String(pods)} ready Pods of ${runtime}`,
    async () => ((await listPods()).filter(isPodReady).length >= pods ? true : undefined),
    SET_UP_WAIT,
  );
  const names = Array.from({ length: RUNS_PER_RUNTIME }, (_, k) => `${runtime}-fn-${k}`);
  for (const name of names) await system.createFunctionRun(name, runtime, HANDLER, 'main:handle');
  const runs = await Promise.all(
    names.map((name) => system.waitForRun(name, 'Ready', (run) => currentPhase(run) === 'Ready', SET_UP_WAIT.timeoutMs)),
  );
  const podList = await listPods();
  const caPem = system.gateway?.caPem ?? '';
  return {
    pods,
    runtime,
    urls: runs.map((run) => system.invokeUrl(runtime, run.metadata.uid ?? '')),
    agents: runs.map(() => new Agent({ keepAlive: true, maxSockets: 1, ca: caPem })),
    runsPerPod: podList.map((pod) => runs.filter((run) => run.status?.assignedPodUID === pod.metadata?.uid).length),
    metricsUrls: podList.map((pod) => ({
      pod: pod.metadata?.name ?? '',
      url: `http://${pod.status?.podIP ?? ''}:${DEFAULTS.runtimedMetricsPort}/metrics`,
    })),
  };
}

function describe(subject: Subject, streams: number, tally: Tally, baselineP50: number | undefined): string {
  const summary = summarizeLatencies(tally.latencies);
  const perSecond = tally.latencies.length / tally.seconds;
  const received = [...tally.perRuntimed.values()].map((counts) => counts.grpc);
  const peer = [...tally.perRuntimed.values()].reduce((sum, counts) => sum + counts.peer, 0);
  const invokes = tally.latencies.length;
  const mean = received.reduce((a, b) => a + b, 0) / Math.max(1, received.length);
  const maxOverMean = mean === 0 ? Number.NaN : Math.max(...received) / mean;
  const vsOnePod = baselineP50 === undefined ? '' : ` (${(summary.p50 / baselineP50).toFixed(2)}x 1-Pod p50)`;
  const failed = [...tally.failures].map(([status, n]) => `${String(n)}x ${String(status)}`).join(', ');
  const cpu = ROLES.map(([role]) => `${role} ${((1000 * (tally.cpu.get(role) ?? 0)) / Math.max(1, invokes)).toFixed(2)}`).join(', ');
  return (
    `  ${String(subject.pods).padStart(2)} Pods, ${streams} stream${streams === 1 ? ' ' : 's'}: ${formatLatencies(summary)}${vsOnePod}, ` +
    `${perSecond.toFixed(0)} invokes/s; peer hops ${peer}/${invokes} (${((100 * peer) / invokes).toFixed(1)} %); ` +
    `per runtimed (from the gateway) [${received.join(', ')}], max ${maxOverMean.toFixed(2)}x mean; ` +
    `CPU ms per invoke: ${cpu}` +
    (failed === '' ? '' : `; not served (not timed): ${failed}`)
  );
}

/** Runs the Pods dimension and returns its report. */
export async function measurePods(options: PodsDimensionOptions): Promise<string> {
  const { system, podCounts, count, rounds, warmup } = options;
  await system.grantGetRuns('alice');
  const subjects: Subject[] = [];
  try {
    // One at a time: eight Pods starting at once on a busy machine take long enough.
    for (const pods of podCounts) subjects.push(await setUp(system, pods));
    const lines: string[] = [
      `Pods dimension: ${count} invocations per Pod count and stream count (after ${warmup} warm-up per stream, not counted), ` +
        `${rounds} rounds in rotating order; ${RUNS_PER_RUNTIME} function Runs per Runtime spread over its Pods`,
    ];
    for (const subject of subjects)
      lines.push(`  ${String(subject.pods).padStart(2)} Pods: the scheduler placed the Runs [${subject.runsPerPod.join(', ')}] per Pod`);
    for (const streams of STREAM_COUNTS) {
      for (const subject of subjects) await segment(system, subject, streams, warmup * streams, `warm-${String(subject.pods)}`);
      const tallies = new Map<Subject, Tally>(
        subjects.map((subject) => [subject, { latencies: [], failures: new Map(), seconds: 0, perRuntimed: new Map(), cpu: new Map() }]),
      );
      const perRound = Math.ceil(count / rounds);
      for (let round = 0; round < rounds; round += 1) {
        const n = Math.min(perRound, count - round * perRound);
        for (let k = 0; k < subjects.length; k += 1) {
          const subject = subjects[(round + k) % subjects.length];
          const tally = subject === undefined ? undefined : tallies.get(subject);
          if (subject === undefined || tally === undefined) continue;
          const before = await readCounts(subject);
          const cpuBefore = await cpuByRole();
          const t0 = performance.now();
          await segment(system, subject, streams, n, `pods-${String(subject.pods)}-${String(streams)}-${String(round)}`, tally);
          tally.seconds += (performance.now() - t0) / 1000;
          addCpu(tally.cpu, cpuBefore, await cpuByRole());
          addCounts(tally.perRuntimed, before, await readCounts(subject));
        }
      }
      const one = subjects.find((subject) => subject.pods === 1);
      const baseline = one === undefined ? undefined : summarizeLatencies(tallies.get(one)?.latencies ?? []).p50;
      for (const subject of subjects) {
        const tally = tallies.get(subject);
        if (tally !== undefined) lines.push(describe(subject, streams, tally, subject.pods === 1 ? undefined : baseline));
      }
    }
    return lines.join('\n');
  } finally {
    for (const subject of subjects) for (const agent of subject.agents) agent.destroy();
  }
}
