/** The slice of a pino logger that signal handling needs. */
export interface SignalLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * Stops a service process on SIGTERM (the kubelet, a supervisor) or SIGINT (Ctrl-C):
 * logs the signal and calls `stop` once. Repeated signals are logged and ignored, because
 * supervisors may signal both the process and its group (local-cluster's terminate).
 * Resolves with the exit code once `stop` settled: 0, or 1 when it failed (logged);
 * pending until a signal arrives. Exiting stays with the caller: a main exits with it,
 * since a stopped service may still hold handles (keep-alive sockets, timers).
 */
export function stopOnSignals(logger: SignalLogger, stop: (signal: NodeJS.Signals) => void | Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        logger.info({ signal }, 'already shutting down');
        return;
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      Promise.resolve()
        .then(() => stop(signal))
        .then(
          () => {
            resolve(0);
          },
          (error: unknown) => {
            logger.error({ err: error }, 'shutdown failed');
            resolve(1);
          },
        );
    };
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  });
}

/** What exitAfterFlush needs of a log destination (pino's SonicBoom). */
export interface FlushableDestination {
  once(event: 'close', listener: () => void): unknown;
  end(): void;
}

/**
 * Ends the process with `code` once every log line was written: end() waits for a write in
 * flight (an exit handler could only write what is queued), bounded in case the output
 * blocks.
 */
export async function exitAfterFlush(destination: FlushableDestination, code: number, boundMs = 2_000): Promise<never> {
  await new Promise<void>((resolve) => {
    setTimeout(resolve, boundMs).unref();
    destination.once('close', resolve);
    destination.end();
  });
  process.exit(code);
}
