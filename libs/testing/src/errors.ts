/** A process that the harness starts and supervises (etcd, kube-apiserver, ...). */
export type Component = string;

/**
 * A component failed to start, exited early or never became ready. Carries the tail of
 * the component's log, because "did not become ready" alone never explains anything.
 */
export class ControlPlaneError extends Error {
  readonly component: Component | undefined;
  readonly logTail: string;

  constructor(message: string, options: { component?: Component; logTail?: string; cause?: unknown } = {}) {
    const tail = options.logTail ?? '';
    super(
      tail === '' ? message : `${message}\n--- last log lines ---\n${tail}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ControlPlaneError';
    this.component = options.component;
    this.logTail = tail;
  }
}

/** A bounded wait ran out of time or attempts; `lastError` is why the last probe failed. */
export class WaitTimeoutError extends Error {
  readonly description: string;
  readonly attempts: number;
  readonly lastError: unknown;

  constructor(description: string, attempts: number, elapsedMs: number, lastError: unknown) {
    const why = lastError === undefined ? '' : `: ${describe(lastError)}`;
    super(
      `timed out after ${attempts} attempts in ${elapsedMs} ms waiting for ${description}${why}`,
      lastError === undefined ? undefined : { cause: lastError },
    );
    this.name = 'WaitTimeoutError';
    this.description = description;
    this.attempts = attempts;
    this.lastError = lastError;
  }
}

/** The test process was not started by the harness's jest global setup (or the file is gone). */
export class ClusterInfoError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ClusterInfoError';
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return typeof error === 'string' ? error : JSON.stringify(error);
}
