// The parts of `dev up` that attach beside the demo: each one's failure is said in a line
// with its cause and log, kept in the state for `dev status`, and ends nothing else.

/** A part: its component and the check after the demo that it serves. */
export const PARTS = {
  'object-store': 'the object store and the artifact task',
  jaeger: 'Jaeger and the traces',
  prometheus: 'Prometheus and the dashboards',
} as const;
export type PartName = keyof typeof PARTS;

/** The components of the parts, supervised like the services but not fatal when they exit. */
export const PART_COMPONENTS: ReadonlySet<string> = new Set<string>(['jaeger', 'prometheus']);

export interface PartFailure {
  /** One line. */
  reason: string;
  /** The part's log: the component's output, then the whole error. */
  log: string;
}

const REASON_MAX = 500;

/** The tail of a component's log that a harness error (ControlPlaneError) carries, if any. */
function logTailOf(error: unknown): string {
  const tail = (error as { logTail?: unknown } | undefined)?.logTail;
  return typeof tail === 'string' ? tail : '';
}

/** The cause of a failure as one line: its message (an aggregate's messages), never a stack; of a log tail only its last line. */
export function failureReason(error: unknown): string {
  let message: string;
  if (error instanceof AggregateError && error.errors.length > 0) message = error.errors.map(failureReason).join('; ');
  else if (error instanceof Error) message = error.message;
  else message = String(error);
  const tail = logTailOf(error);
  if (tail !== '') {
    const lastLine = tail.trim().split('\n').at(-1) ?? '';
    message = `${message.split('\n')[0] ?? ''}; its log ends: ${lastLine}`;
  }
  const line = message.replace(/\s*\n\s*/g, ' ').trim();
  return line.length > REASON_MAX ? `${line.slice(0, REASON_MAX)}…` : line;
}

/** All there is about a failure, for the part's log: the stack (a harness error's message holds its log tail). */
export function failureDetail(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** What `up` says when a part failed. */
export function partFailedLine(part: PartName, failure: PartFailure): string {
  return `${part} FAILED (${PARTS[part]}; the demo and the rest keep running): ${failure.reason}; log ${failure.log}`;
}

/** `dev status`'s word for a component: FAILED with the part's reason wins over running. */
export function componentHealth(alive: boolean, failure: PartFailure | undefined): string {
  if (failure !== undefined) return `FAILED: ${failure.reason}`;
  return alive ? 'running' : 'EXITED';
}
