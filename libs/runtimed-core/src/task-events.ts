import { RUNTIMED_LOG_MESSAGES } from '@kruntimes/api';
import { runtimeServerV1 } from '@kruntimes/proto';
import type { Logger } from 'pino';
import type { TaskOutcome } from './metrics.ts';
import type { Execution } from './run-work.ts';

/** The metric outcome of an execution stopped on purpose. */
export const STOPPED_OUTCOME = {
  cancel: 'cancelled',
  expire: 'timeout',
  release: 'released',
  waitingInput: 'waiting_input',
  drain: 'drain_window_exceeded',
} as const satisfies Record<NonNullable<Execution['stoppedFor']>, TaskOutcome>;

/** How an execution ended, for the log line of a wait's end. */
export function exitReasonName(exited: runtimeServerV1.ExecutionExited | undefined, failure: unknown): string {
  if (exited !== undefined) {
    const reason = exited.reason;
    return Object.entries(runtimeServerV1.ExitReason).find(([, value]) => value === reason)?.[0] ?? String(reason);
  }
  if (failure === undefined) return 'stopped before it started';
  return `the stream ended: ${failure instanceof Error ? failure.message : 'no exit event'}`;
}

/** The task's output goes to structured logs, never into Run status. */
export function logEvent(log: Logger, event: Exclude<runtimeServerV1.ExecuteEvent['event'], { $case: 'exited' }>): void {
  switch (event?.$case) {
    case 'started':
      log.info({ pid: event.started.pid }, RUNTIMED_LOG_MESSAGES.taskStarted);
      break;
    case 'log':
      log.info(
        {
          stream: event.log.stream === runtimeServerV1.LogStream.LOG_STREAM_STDERR ? 'stderr' : 'stdout',
          line: event.log.text,
          truncated: event.log.truncated || undefined,
        },
        RUNTIMED_LOG_MESSAGES.taskOutput,
      );
      break;
    case undefined:
      break;
  }
}
