import { attemptsWithoutLogs, selectRunLogs } from '@kruntimes/api';
import type { Run, RunLogRecord, RunLogSelection } from '@kruntimes/api';
import { classify, currentPhase, finishKind } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { RuntimedLogs } from '../pod-logs.ts';
import type { CliIo, CommandContext } from './context.ts';

export type LogsCommandLine = Extract<Command, { name: 'logs' }>;

/** Shown after a line that the Runtime Server cut at its line bound (never dropped). */
export const CUT_LINE_MARKER = ' [kruntimes: line cut at the line bound]';
/** After the Run ended, how long a follow keeps reading for the lines still on their way. */
const FOLLOW_TAIL_MS = 1_000;
/** How often a follow looks at the Run (its phase, a new attempt on another Pod). */
const FOLLOW_POLL_MS = 1_000;

/**
 * The last attempt that started, as far as the Run says: the current one once it runs (or
 * ran: a finish that needs a process), the one before while the current is still queued.
 */
export function lastStartedAttempt(run: Pick<Run, 'status'>): number {
  const attempt = run.status?.attempt ?? 0;
  const phase = currentPhase(run);
  switch (classify(phase)) {
    case 'queued':
    case 'assigned':
      return attempt - 1;
    case 'executing':
    case 'serving':
    case 'parked':
      return attempt;
    case 'terminal': {
      // Cancelled or Interrupted may have ended an attempt that never started: no claim on its logs.
      const kind = finishKind(phase);
      return kind === 'succeeded' || kind === 'failed' || kind === 'timedOut' ? attempt : attempt - 1;
    }
  }
}

/** One record as the user reads it: a task's line on its own stream, an invocation as a line on stdout. */
export function writeRecord(io: CliIo, record: RunLogRecord): void {
  switch (record.kind) {
    case 'output':
      (record.stream === 'stdout' ? io.stdout : io.stderr).write(`${record.line}${record.truncated ? CUT_LINE_MARKER : ''}\n`);
      return;
    case 'invocation':
      io.stdout.write(
        [
          new Date(record.timeMs).toISOString(),
          record.invocationId,
          record.code,
          ...(record.durationMs === undefined ? [] : [`${String(record.durationMs)}ms`]),
          ...(record.attempt === undefined ? [] : [`attempt ${String(record.attempt)}`]),
          record.route,
        ].join(' ') + '\n',
      );
      return;
    case 'started':
      return;
  }
}

/** Writes the records, with an attempt heading (on stderr) whenever the attempt changes and more than one is shown. */
export function writeRecords(io: CliIo, records: readonly RunLogRecord[]): void {
  const attempts = new Set(records.filter((r) => r.kind !== 'invocation').map((r) => r.attempt));
  let shown: number | undefined;
  for (const record of records) {
    if (attempts.size > 1 && record.kind !== 'invocation' && record.attempt !== shown) {
      shown = record.attempt;
      io.stderr.write(`== attempt ${String(record.attempt)} ==\n`);
    }
    writeRecord(io, record);
  }
}

/**
 * `krt logs RUN [-f] [--attempt N] [--since D] [--invocation-id ID]`: a task's output per
 * attempt, or a function Run's invocation lines, from runtimed's log of the Runtime's Pods
 * (the Pod log API, with the user's own rights). Attempts whose Pod is gone are named on
 * stderr, and the exit code is then 3.
 */
export async function logsCommand(ctx: CommandContext, command: LogsCommandLine): Promise<ExitCode> {
  const run = await ctx.runs.get(command.run);
  const uid = run.metadata.uid ?? '';
  const logs = new RuntimedLogs(ctx.kubeConfig, ctx.runs.namespace);
  const selection: RunLogSelection = {
    uid,
    ...(command.attempt === undefined ? {} : { attempt: command.attempt }),
    ...(command.sinceMs === undefined ? {} : { sinceMs: ctx.now() - command.sinceMs }),
    ...(command.invocationId === undefined ? {} : { invocationId: command.invocationId }),
  };
  // A follow replays whole logs (append-only) and skips what was shown: no `since` on the Pod log API then.
  const sinceSeconds = command.sinceMs === undefined || command.follow ? undefined : Math.max(1, Math.ceil(command.sinceMs / 1000));
  const pods = await logs.pods(run.spec.runtime);
  const followed = command.follow ? run.status?.assignedPod : undefined;
  const records: RunLogRecord[] = [];
  /** Per Pod, how many records of this Run were read: a follow of that Pod skips them. */
  const seen = new Map<string, number>();
  for (const pod of pods) {
    const name = pod.metadata?.name ?? '';
    if (name === '') continue;
    if (name === followed) {
      // Its current log is followed from the start; what a runtimed before a restart wrote is read here.
      records.push(...(await logs.readPrevious(name, sinceSeconds)).filter((r) => r.uid === uid));
      continue;
    }
    const { previous, current } = await logs.read(name, sinceSeconds);
    const mine = current.filter((r) => r.uid === uid);
    // A follow replays the current container's log only.
    seen.set(name, mine.length);
    records.push(...previous.filter((r) => r.uid === uid), ...mine);
  }
  const found = selectRunLogs(records, selection);
  writeRecords(ctx.io, found);
  let code: ExitCode = EXIT.ok;
  if (command.follow && followed !== undefined) {
    await followRunLogs(ctx, command.run, logs, followed, selection, seen);
  } else if (command.sinceMs === undefined && command.invocationId === undefined) {
    // Only an unfiltered read can tell that an attempt left nothing behind.
    const missing = attemptsWithoutLogs(found, uid, lastStartedAttempt(run), command.attempt);
    for (const attempt of missing) {
      ctx.io.stderr.write(
        `attempt ${String(attempt)} of Run "${command.run}": its output is no longer available (the Pod it ran on is gone)\n`,
      );
    }
    if (missing.length > 0) code = EXIT.notFound;
  }
  return code;
}

/**
 * Follows the log of the Pod the Run is assigned to until the Run ends (then a short tail),
 * moving to the Pod of a new attempt when the Run gets one.
 */
export async function followRunLogs(
  ctx: CommandContext,
  runName: string,
  logs: RuntimedLogs,
  firstPod: string,
  selection: RunLogSelection,
  seen: Map<string, number>,
  signal?: AbortSignal,
): Promise<void> {
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal?.aborted === true) resolve('aborted');
    else
      signal?.addEventListener(
        'abort',
        () => {
          resolve('aborted');
        },
        { once: true },
      );
  });
  let pod: string | undefined = firstPod;
  let lastAttempt: number | undefined;
  while (pod !== undefined) {
    const current: string = pod;
    let count = 0;
    const onRecord = (record: RunLogRecord): void => {
      if (record.uid !== selection.uid) return;
      count += 1;
      // A Pod's log is append-only: its first records are the ones already shown.
      if (count <= (seen.get(current) ?? 0)) return;
      seen.set(current, count);
      if (selectRunLogs([record], selection).length === 0) return;
      if (record.kind !== 'invocation') {
        if (lastAttempt !== undefined && record.attempt !== lastAttempt) ctx.io.stderr.write(`== attempt ${String(record.attempt)} ==\n`);
        lastAttempt = record.attempt;
      }
      writeRecord(ctx.io, record);
    };
    const stop = new AbortController();
    const following = logs.follow(current, onRecord, stop.signal);
    let next: string | undefined;
    for (;;) {
      const settled = await Promise.race([
        following.then(() => 'ended' as const),
        new Promise<'tick'>((resolve) => {
          setTimeout(() => {
            resolve('tick');
          }, FOLLOW_POLL_MS);
        }),
        aborted,
      ]);
      if (settled === 'aborted') {
        next = undefined;
        break;
      }
      const run = await ctx.runs.get(runName);
      if (finishKind(currentPhase(run)) !== undefined) {
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_TAIL_MS));
        next = undefined;
        break;
      }
      const assigned = run.status?.assignedPod;
      if (assigned !== undefined && assigned !== current) {
        next = assigned;
        break;
      }
      if (settled === 'ended') {
        // The container's log ended (it stopped) while the Run goes on: look again for its Pod.
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
        next = assigned ?? current;
        break;
      }
    }
    stop.abort();
    await following;
    pod = next;
  }
}
