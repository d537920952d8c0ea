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

/**
 * Writes records as the user reads them, with an `== attempt N ==` heading (on stderr)
 * before the records of an attempt whenever more than one attempt is shown: all of them at
 * once (`krt logs`), or as they come (`-f`, where a heading starts once a second attempt does).
 */
export class RecordWriter {
  readonly #io: CliIo;
  #headings: boolean;
  #lastAttempt: number | undefined;

  constructor(io: CliIo) {
    this.#io = io;
    this.#headings = false;
  }

  /** Writes `records`; headings when they (or what was written before) span several attempts. */
  write(records: readonly RunLogRecord[]): void {
    const attempts = new Set(records.filter((r) => r.kind !== 'invocation').map((r) => r.attempt));
    if (this.#lastAttempt !== undefined) attempts.add(this.#lastAttempt);
    if (attempts.size > 1) this.#headings = true;
    for (const record of records) {
      if (record.kind !== 'invocation') {
        if (this.#lastAttempt !== undefined && record.attempt !== this.#lastAttempt) this.#headings = true;
        if (this.#headings && record.attempt !== this.#lastAttempt) this.#io.stderr.write(`== attempt ${String(record.attempt)} ==\n`);
        this.#lastAttempt = record.attempt;
      }
      writeRecord(this.#io, record);
    }
  }
}

/** Writes the records, with an attempt heading (on stderr) whenever the attempt changes and more than one is shown. */
export function writeRecords(io: CliIo, records: readonly RunLogRecord[]): void {
  new RecordWriter(io).write(records);
}

/**
 * Which records of a container log are new to the user. A log is read (or followed) from
 * its start, and the same container's log may be read more than once: a follow replays
 * what was read before it, a follow that ended (runtimed restarted, the container is
 * waiting) starts again on the last container's log. The n-th occurrence of one record in
 * one log is shown once however many reads return it; a restarted container's records
 * (other times, another attempt) are new.
 */
export class ShownRecords {
  readonly #shown = new Map<string, number>();

  /** A filter for one read of one container log, from its start: true for a record to show. */
  reader(): (record: RunLogRecord) => boolean {
    const counts = new Map<string, number>();
    return (record) => {
      const key = JSON.stringify(record);
      const occurrence = (counts.get(key) ?? 0) + 1;
      counts.set(key, occurrence);
      if (occurrence <= (this.#shown.get(key) ?? 0)) return false;
      this.#shown.set(key, occurrence);
      return true;
    };
  }
}

/**
 * `krt logs RUN [-f] [--attempt N] [--since D] [--invocation-id ID]`: a task's output per
 * attempt, or a function Run's invocation lines, from runtimed's log of the Runtime's Pods
 * (the Pod log API, with the user's own rights). Attempts whose Pod is gone are named on
 * stderr, and the exit code is then 3; so is an invocation ID no log names.
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
  const shown = new ShownRecords();
  const records: RunLogRecord[] = [];
  for (const pod of pods) {
    const name = pod.metadata?.name ?? '';
    if (name === '') continue;
    // The log of a runtimed before its container's last restart (an attempt whose owner was killed), then the current one.
    const { previous, current } = await logs.read(name, sinceSeconds);
    for (const log of [previous, current]) records.push(...log.filter((r) => r.uid === uid).filter(shown.reader()));
  }
  const found = selectRunLogs(records, selection);
  const writer = new RecordWriter(ctx.io);
  writer.write(found);
  const followed = command.follow ? run.status?.assignedPod : undefined;
  if (followed !== undefined && followed !== '') {
    await followRunLogs(ctx, command.run, logs, followed, selection, { shown, writer });
    return EXIT.ok;
  }
  if (command.invocationId !== undefined && found.length === 0) {
    ctx.io.stderr.write(
      `invocation "${command.invocationId}" of Run "${command.run}" is not in the logs of its Runtime's Pods (not invoked, or the Pod that served it is gone)\n`,
    );
    return EXIT.notFound;
  }
  // Only an unfiltered read of a task can tell that an attempt left nothing behind (a
  // function Run that was never invoked has no line to show, on a Pod that is there).
  if (command.sinceMs !== undefined || command.invocationId !== undefined || run.spec.mode.task === undefined) return EXIT.ok;
  const missing = attemptsWithoutLogs(found, uid, lastStartedAttempt(run), command.attempt);
  for (const attempt of missing) {
    ctx.io.stderr.write(
      `attempt ${String(attempt)} of Run "${command.run}": its output is no longer available (the Pod it ran on is gone)\n`,
    );
  }
  return missing.length > 0 ? EXIT.notFound : EXIT.ok;
}

/** What a follow shares with what was shown before it: the records shown, and the attempt headings. */
export interface FollowState {
  shown: ShownRecords;
  writer: RecordWriter;
}

/**
 * Follows the log of the Pod the Run is assigned to until the Run ends (then a short tail),
 * moving to the Pod of a new attempt when the Run gets one, and following a Pod's runtimed
 * again after its container restarted (its new log; the replay of the old one is skipped).
 */
export async function followRunLogs(
  ctx: CommandContext,
  runName: string,
  logs: RuntimedLogs,
  firstPod: string,
  selection: RunLogSelection,
  state: FollowState,
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
  while (pod !== undefined) {
    const current: string = pod;
    const fresh = state.shown.reader();
    const onRecord = (record: RunLogRecord): void => {
      if (record.uid !== selection.uid || !fresh(record)) return;
      state.writer.write(selectRunLogs([record], selection));
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
