/**
 * What runtimed writes to its log about a Run, as the reader (`krt logs`, a log collector)
 * finds it: one JSON object per line (pino), with the Run's UID and attempt on every
 * record of that Run. runtimed writes with these messages; readers select by them.
 */
export const RUNTIMED_LOG_MESSAGES = {
  /** A task's process started (`pid`). */
  taskStarted: 'task started',
  /** One line a task wrote (`stream`, `line`, `truncated` when it was cut at the line bound). */
  taskOutput: 'task output',
  /** An invocation this runtimed answered (`invocationId`, `route`, `code`, `durationMs`). */
  invocationServed: 'invocation served',
  invocationFailed: 'invocation failed',
} as const;

export type RunLogRecord =
  | { kind: 'started'; uid: string; attempt: number; timeMs: number; pid?: number }
  | { kind: 'output'; uid: string; attempt: number; timeMs: number; stream: 'stdout' | 'stderr'; line: string; truncated: boolean }
  | {
      kind: 'invocation';
      uid: string;
      attempt: number | undefined;
      timeMs: number;
      invocationId: string;
      code: string;
      route: string;
      durationMs: number | undefined;
    };

/** One line of runtimed's log as a record about a Run; undefined for any other line (or one that is not JSON). */
export function parseRuntimedLogLine(text: string): RunLogRecord | undefined {
  if (!text.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const uid = record.runUID;
  const timeMs = record.time;
  if (typeof uid !== 'string' || uid === '' || typeof timeMs !== 'number') return undefined;
  const attempt = typeof record.attempt === 'number' ? record.attempt : undefined;
  switch (record.msg) {
    case RUNTIMED_LOG_MESSAGES.taskStarted:
      if (attempt === undefined) return undefined;
      return { kind: 'started', uid, attempt, timeMs, ...(typeof record.pid === 'number' ? { pid: record.pid } : {}) };
    case RUNTIMED_LOG_MESSAGES.taskOutput:
      if (attempt === undefined || typeof record.line !== 'string') return undefined;
      return {
        kind: 'output',
        uid,
        attempt,
        timeMs,
        stream: record.stream === 'stderr' ? 'stderr' : 'stdout',
        line: record.line,
        truncated: record.truncated === true,
      };
    case RUNTIMED_LOG_MESSAGES.invocationServed:
    case RUNTIMED_LOG_MESSAGES.invocationFailed:
      if (typeof record.invocationId !== 'string') return undefined;
      return {
        kind: 'invocation',
        uid,
        attempt,
        timeMs,
        invocationId: record.invocationId,
        code: typeof record.code === 'string' ? record.code : '',
        route: typeof record.route === 'string' ? record.route : '',
        durationMs: typeof record.durationMs === 'number' ? record.durationMs : undefined,
      };
    default:
      return undefined;
  }
}

export interface RunLogSelection {
  uid: string;
  /** Only this attempt. */
  attempt?: number;
  /** Only records at or after this time. */
  sinceMs?: number;
  /** Only this invocation (function Runs). */
  invocationId?: string;
}

/** The records of one Run that the selection asks for, oldest first (stable for equal times). */
export function selectRunLogs(records: readonly RunLogRecord[], selection: RunLogSelection): RunLogRecord[] {
  return records
    .filter(
      (r) =>
        r.uid === selection.uid &&
        (selection.attempt === undefined || r.attempt === selection.attempt) &&
        (selection.sinceMs === undefined || r.timeMs >= selection.sinceMs) &&
        (selection.invocationId === undefined || (r.kind === 'invocation' && r.invocationId === selection.invocationId)),
    )
    .map((record, index) => ({ record, index }))
    .sort((a, b) => a.record.timeMs - b.record.timeMs || a.index - b.index)
    .map(({ record }) => record);
}

/**
 * Attempts of `1..lastAttempt` (or only `only`) of which no log of any reachable Pod tells:
 * their Pods, and with them their output, are gone. `lastAttempt` started (or it would not be
 * asked about); an attempt is known when a record of it was found.
 */
export function attemptsWithoutLogs(records: readonly RunLogRecord[], uid: string, lastAttempt: number, only?: number): number[] {
  const known = new Set(records.filter((r) => r.uid === uid).map((r) => r.attempt));
  const asked = only === undefined ? Array.from({ length: Math.max(0, lastAttempt) }, (_, k) => k + 1) : [only];
  return asked.filter((attempt) => attempt >= 1 && attempt <= lastAttempt && !known.has(attempt));
}
