/**
 * Chaos soak (a benchmark, not a test): the full local system under a steady load while a
 * seeded generator injects faults, then the invariants, checked over the whole run.
 *   npx nx run integration:soak -- --minutes 10 [--seed N] [--faults rollout,scale-down,evict-pod] [--isolation sharedUser]
 * `--faults` (or KRT_SOAK_FAULTS) limits the fault kinds drawn: a comma-separated list of
 * kinds (kinds.ts; `planned` stands for the rollout, the scale-down and the eviction); all of
 * them by default. `--isolation`: the Runtime Pods' runIsolation, perRunUser (walled, the
 * default, as root only) or sharedUser.
 *
 * One control plane of its own (so that kube-apiserver can be restarted and etcd frozen),
 * the whole system (controller-manager, scheduler, stale-recovery, gateway, Runtime Pods of
 * a Python and a Bash Runtime as real processes, runtimed's Lease 4 s). Callers invoke one
 * function Run each through the gateway; task Runs are created every 2 s (every other one
 * retrySafe). Exits non-zero when an invariant broke; prints the seed to replay it.
 */
import { randomInt } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { API_GROUP, API_VERSION, BOUNDS, CONDITION_TYPES, RUN_PLURAL } from '@kruntimes/api';
import { currentPhase, findCondition, isTerminal } from '@kruntimes/run-state';
import type { Run } from '@kruntimes/api';
import { Cluster, ControlPlane, REPO_ROOT, percentile, tallyTasks } from '@kruntimes/testing';
import { System, servedInvocations } from '../src/index.ts';
import { Faults } from './faults.ts';
import type { FaultRecord } from './faults.ts';
import { longestGaps } from './gaps.ts';
import { FAULT_KINDS, isPlanned, parseFaultKinds } from './kinds.ts';
import type { FaultKind } from './kinds.ts';
import { Callers, TaskCreator } from './load.ts';
import type { InvokeRecord } from './load.ts';
import { RunObserver } from './observer.ts';
import { plannedMoveViolations } from './planned.ts';
import { SeededRandom } from './random.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    seed: { type: 'string' },
    faults: { type: 'string' },
    isolation: { type: 'string', default: 'perRunUser' },
  },
  strict: true,
});
const minutes = Number(values.minutes);
if (!(minutes > 0 && minutes <= 24 * 60)) throw new Error(`--minutes must be a number of minutes, not ${values.minutes}`);
const seed = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);
if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, not ${String(values.seed)}`);
const random = new SeededRandom(seed);
const isolation = values.isolation;
if (isolation !== 'perRunUser' && isolation !== 'sharedUser') {
  process.stderr.write(`soak: --isolation must be perRunUser or sharedUser, not ${isolation}\n`);
  process.exit(2);
}
// Checked before anything starts: a misspelt kind fails at once (exit 2), listing the known ones.
const kinds = ((): readonly FaultKind[] => {
  try {
    return parseFaultKinds(values.faults ?? process.env.KRT_SOAK_FAULTS);
  } catch (error) {
    process.stderr.write(`soak: --faults: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
})();
const allKinds = kinds.length === FAULT_KINDS.length;

const FUNCTION_RUNS = 4;
/**
 * A function Run is retried within its budget after each lost owner and ends Failed once
 * the budget is spent (the design's rule). The soak may hit one function's owner several
 * times, so its functions get the largest budget: a Failed function then means a bug, not
 * a budget the faults used up.
 */
const FUNCTION_RETRY_POLICY = { maxAttempts: BOUNDS.maxAttempts, initialBackoffSeconds: 1, maxBackoffSeconds: 5 };
const CAPACITY = new Map([
  ['py', 4],
  ['sh', 4],
]);
/** After the last fault: how long every Run gets to be Ready (functions) or terminal (tasks). */
const SETTLE_MS = 180_000;
/** Connection errors this close to a declared gateway restart belong to it. */
const WINDOW_SLACK_MS = 2_000;

const began = Date.now();
const clock = (): string => {
  const seconds = Math.round((Date.now() - began) / 1000);
  return `${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
};
const say = (line: string): void => {
  process.stdout.write(`[soak ${clock()}] ${line}\n`);
};

say(
  `seed ${String(seed)}, faults: ${allKinds ? 'all kinds' : kinds.join(', ')} (replay: npx nx run integration:soak -- --seed ${String(seed)} --minutes ${String(minutes)}${allKinds ? '' : ` --faults ${kinds.join(',')}`} --isolation ${isolation})`,
);
const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
let failed = false;
let reported = false;
try {
  system = await System.start({
    prefix: 'soak',
    cluster: new Cluster(controlPlane.info),
    staleRecovery: true,
    podEnv: { KRT_LEASE_DURATION_SECONDS: '4', KRT_LEASE_RENEW_SECONDS: '1' },
    runIsolation: isolation,
  });
  const current = system;
  await current.createRuntime('py', { language: 'python', replicas: 3, runs: CAPACITY.get('py') ?? 1 });
  await current.createRuntime('sh', { language: 'bash', replicas: 2, runs: CAPACITY.get('sh') ?? 1 });
  await Promise.all([current.waitRuntimeReady('py', 3), current.waitRuntimeReady('sh', 2)]);
  const handler = 'def handle(event, context):\n    return event\n';
  for (let k = 0; k < FUNCTION_RUNS; k += 1)
    await current.createFunctionRun(`fn-${String(k)}`, 'py', handler, 'main:handle', { retryPolicy: FUNCTION_RETRY_POLICY });
  const functions = await Promise.all(Array.from({ length: FUNCTION_RUNS }, (_, k) => current.waitReady(`fn-${String(k)}`)));
  await current.grantGetRuns('alice');
  say(`system up: 3 Python and 2 Bash Runtime Pods (${isolation}), ${String(FUNCTION_RUNS)} function Runs Ready`);

  const observer = new RunObserver(current.admin, current.name, CAPACITY);
  await observer.start();
  const callers = new Callers(
    current,
    'py',
    functions.map((run) => ({ name: run.metadata.name ?? '', uid: run.metadata.uid ?? '' })),
    100,
  );
  const tasks = new TaskCreator(current, 'sh', 2_000);
  const faults = new Faults(current, controlPlane, ['py', 'sh'], random, kinds);
  callers.start();
  tasks.start();

  const deadline = began + minutes * 60_000;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(random.between(8_000, 20_000), Math.max(0, deadline - Date.now()))));
    if (Date.now() >= deadline) break;
    const fault = await faults.inject();
    say(
      `${fault.kind} ${fault.target}${fault.affectedRuns.length > 0 ? ` (owner of ${fault.affectedRuns.join(', ')})` : ''}: ` +
        `${String(fault.end - fault.start)} ms${fault.error === undefined ? '' : `, failed: ${fault.error}`}`,
    );
  }
  tasks.stop();
  const faultsEnded = Date.now();
  say(`faults stopped; waiting up to ${String(SETTLE_MS / 1000)} s for every Run to be Ready or terminal`);
  const settleBy = faultsEnded + SETTLE_MS;
  while (Date.now() < settleBy && unsettled(observer).length > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
  await callers.stop();
  observer.stop();
  await faults.killZombies();

  failed = await report({
    system: current,
    observer,
    records: callers.records,
    faults: faults.records,
    tasksCreated: tasks.created,
    tasksRefused: tasks.refused.length,
    settleMs: Date.now() - faultsEnded,
  });
  reported = true;
} finally {
  // A broken invariant, or a soak that threw, keeps the processes' logs for the post-mortem.
  const keepLogs = failed || !reported;
  if (keepLogs && system !== undefined) say(`logs kept in ${system.dir}`);
  await system?.stop({ keepLogs }).catch((error: unknown) => {
    say(`the system did not stop cleanly: ${String(error)}`);
  });
  await controlPlane.stop();
}
say(failed ? 'FAILED: an invariant broke (above)' : 'all invariants held');
process.exitCode = failed ? 1 : 0;

function unsettled(observer: RunObserver, only?: 'function'): string[] {
  return [...observer.current.values()]
    .filter((run) => only === undefined || run.spec.mode.function !== undefined)
    .filter((run) => {
      const phase = currentPhase(run);
      if (run.spec.mode.function !== undefined)
        return !(phase === 'Ready' && findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.status === 'True');
      return !isTerminal(phase);
    })
    .map(describeUnsettled);
}

/** Name, phase, attempt and the Ready condition's reason: why a Run did not settle, without the logs. */
function describeUnsettled(run: Run): string {
  const ready = findCondition(run.status?.conditions, CONDITION_TYPES.ready);
  const why = ready === undefined ? '' : `, ${ready.reason}: ${ready.message}`;
  return `${run.metadata.name ?? ''} (${currentPhase(run)}, attempt ${String(run.status?.attempt ?? 0)}${why})`;
}

interface Outcome {
  system: System;
  observer: RunObserver;
  records: InvokeRecord[];
  faults: FaultRecord[];
  /** Names of the task Runs the soak created (the API server accepted the create). */
  tasksCreated: readonly string[];
  tasksRefused: number;
  settleMs: number;
}

/** Prints the figures and returns whether an invariant broke. */
async function report(o: Outcome): Promise<boolean> {
  const problems: string[] = [];
  const line = (text: string): void => {
    process.stdout.write(`  ${text}\n`);
  };
  process.stdout.write(
    `\nsoak: seed ${String(seed)}, ${String(minutes)} min of faults, ${String(o.faults.length)} faults${allKinds ? '' : ` of ${kinds.join(', ')}`}\n`,
  );
  const byKind = new Map<string, number>();
  for (const fault of o.faults) byKind.set(fault.kind, (byKind.get(fault.kind) ?? 0) + 1);
  line(`faults: ${[...byKind].map(([kind, count]) => `${kind} ${String(count)}`).join(', ')}`);

  // Invocations: every answer a defined status carrying its invocation ID; a connection
  // error only inside a declared gateway restart.
  const gatewayWindows = o.faults.filter((f) => f.window === 'gateway');
  const inWindow = (record: InvokeRecord): boolean =>
    gatewayWindows.some((w) => record.start <= w.end + WINDOW_SLACK_MS && record.end >= w.start - WINDOW_SLACK_MS);
  const byCode = new Map<string, number>();
  for (const record of o.records)
    byCode.set(`${String(record.status)} ${record.code}`, (byCode.get(`${String(record.status)} ${record.code}`) ?? 0) + 1);
  const unclassified = o.records.filter((record) => !record.classified && !(record.status === 'connection' && inWindow(record)));
  line(
    `invocations sent: ${String(o.records.length)}; by answer: ${[...byCode]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${String(n)}`)
      .join(', ')}`,
  );
  line(`invocations a caller could not classify: ${String(unclassified.length)}`);
  if (unclassified.length > 0)
    problems.push(
      `unclassified answers: ${unclassified
        .slice(0, 5)
        .map((r) => `${r.invocationId} ${String(r.status)} ${r.code}`)
        .join('; ')}`,
    );

  // Executions per invocation ID, from every Runtime Server log (zombies' included).
  const served = await servedInvocations(o.system.node.config.stateDir, o.system.name);
  const executions = new Map<string, number>();
  for (const invocation of served) executions.set(invocation.invocationId, (executions.get(invocation.invocationId) ?? 0) + 1);
  const repeated = [...executions].filter(([, count]) => count > 1);
  line(
    `executions: ${String(served.length)} of ${String(executions.size)} invocation IDs; IDs run more than once: ${String(repeated.length)}`,
  );
  if (repeated.length > 0)
    problems.push(
      `invocations run more than once: ${repeated
        .slice(0, 5)
        .map(([id, n]) => `${id} x${String(n)}`)
        .join(', ')}`,
    );

  // Task Runs: every one created, by the last phase seen (watch events, DELETED ones
  // included, and a list now). Finished Runs are collected (the per-Runtime history keeps
  // the newest), so those present now are only a part of them. A Run gone without its
  // terminal version seen finished (only finished Runs are collected) while the watch was
  // down; lost means created and, after the settle bound, neither terminal nor gone.
  const listed = await listRuns(o.system);
  for (const run of listed) o.observer.lastPhases.observe('LISTED', run);
  const tally = tallyTasks(o.tasksCreated, o.observer.lastPhases.byName(), new Set(listed.map((run) => run.metadata.name ?? '')));
  line(
    `task Runs created: ${String(tally.created)} (${String(o.tasksRefused)} refused by a down API server); by the last phase seen: ${[
      ...tally.byLastPhase,
    ]
      .sort((a, b) => b[1] - a[1])
      .map(([p, n]) => `${p} ${String(n)}`)
      .join(', ')}`,
  );
  line(
    `task Runs never seen finish (collected after the watch missed their end): ${String(tally.finishedUnseen.length)}${
      tally.finishedUnseen.length === 0 ? '' : ` (${tally.finishedUnseen.slice(0, 10).join(', ')})`
    }`,
  );
  const lost = [...tally.lost, ...unsettled(o.observer, 'function')];
  line(
    `Runs lost (created, neither Ready nor terminal ${String(Math.round(o.settleMs / 1000))} s after the faults stopped): ${String(lost.length)} (tasks ${String(tally.lost.length)})`,
  );
  if (lost.length > 0) problems.push(`lost Runs: ${lost.slice(0, 10).join(', ')}`);

  // Capacity, attempts, epochs: checked on every version the watch delivered.
  line(`capacity, attempt and epoch violations: ${String(o.observer.violations.length)} (watch restarts: ${String(o.observer.restarts)})`);
  problems.push(...o.observer.violations.slice(0, 10));
  line(`status writes refused to a fenced epoch: ${String(await fencedRefusals(o.system))}`);

  // Planned disruptions (rollout, scale-down, eviction): no attempt spent, no task cut short.
  const lastPhase = new Map([...o.observer.lastPhases.byName()].map(([name, seen]) => [name, seen.phase]));
  const planned = plannedMoveViolations(o.faults, o.observer.attemptRises, lastPhase);
  const moves = o.observer.attemptRises.reduce((sum, rise) => sum + rise.plannedMoves, 0);
  line(
    `planned moves (drained Pods handing Runs over): ${String(moves)}; attempts spent or tasks cut short by a planned disruption: ${String(planned.length)}`,
  );
  problems.push(...planned.slice(0, 10));

  // Time to recover: from the fault until the hit Run's caller got a 200 again.
  const recoveries: number[] = [];
  for (const fault of o.faults) {
    for (const run of fault.affectedRuns) {
      const next = o.records.find((r) => r.run === run && r.status === 200 && r.start >= fault.start);
      if (next !== undefined) recoveries.push(next.end - fault.start);
    }
  }
  line(
    recoveries.length === 0
      ? 'time to recover: no fault hit a function Run owner'
      : `time to recover (fault -> the hit Run serves again, ${String(recoveries.length)} cases): p50 ${String(Math.round(percentile(recoveries, 0.5)))} ms, max ${String(Math.max(...recoveries))} ms`,
  );
  // Planned disruptions of the functions' Runtime (py): the longest each function's caller went without a 200.
  const answers = o.records.map((r) => ({ run: r.run, end: r.end, ok: r.status === 200 }));
  const functionNames = Array.from({ length: FUNCTION_RUNS }, (_, k) => `fn-${String(k)}`);
  for (const kind of FAULT_KINDS.filter(isPlanned)) {
    const windows = o.faults.filter((f) => f.kind === kind && (f.target === 'py' || f.target.startsWith('py/')));
    if (windows.length === 0) continue;
    const gaps = [...longestGaps(answers, functionNames, windows)].map(
      ([run, gap]) =>
        `${run} ${gap === undefined ? '-' : `${String(gap.to - gap.from)} ms (${String(gap.refused)} refused${gap.open ? ', no 200 after' : ''})`}`,
    );
    line(`longest without a 200 per function during ${kind} of py (${String(windows.length)} windows): ${gaps.join(', ')}`);
  }
  const apiWindows = o.faults.filter((f) => f.window === 'apiserver');
  const whileDown = o.records.filter((r) => r.status === 200 && apiWindows.some((w) => r.start >= w.start && r.end <= w.end));
  line(
    `invocations served while kube-apiserver was down or etcd frozen: ${String(whileDown.length)} (${String(apiWindows.length)} windows)`,
  );
  for (const problem of problems) process.stdout.write(`  VIOLATION ${problem}\n`);
  return problems.length > 0;
}

async function listRuns(system: System): Promise<Run[]> {
  const list = (await system.objects.listNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: system.name,
    plural: RUN_PLURAL,
  })) as { items: Run[] };
  return list.items;
}

/** Status writes runtimed gave up because its epoch was fenced (its log lines say so). */
async function fencedRefusals(system: System): Promise<number> {
  const logs = join(system.node.config.stateDir, 'logs');
  let count = 0;
  for (const dir of await readdir(logs)) {
    const text = await readFile(join(logs, dir, 'runtimed.log'), 'utf8').catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw error;
    });
    for (const message of ['no longer the owner; dropping the Run locally', 'task outcome not written: the Run moved on'])
      count += text.split(message).length - 1;
  }
  return count;
}
