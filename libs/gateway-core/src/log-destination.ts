import { exitAfterFlush } from '@kruntimes/host';
import { pino } from 'pino';

/** How long an access line may wait in the buffer before it is written. */
const LOG_FLUSH_MS = 100;
/** What is gathered before a write: under load one write per dozen access lines instead of one each. */
const LOG_MIN_WRITE_BYTES = 4096;

export interface GatewayLogDestination {
  destination: ReturnType<typeof pino.destination>;
  /** Ends the log (what is buffered is written, within exitAfterFlush's bound), then exits with `code`. */
  end: (code: number) => Promise<never>;
}

/**
 * The gateway's log destination on stdout: asynchronous writes (coalesced while one is in
 * flight), so that a log line never blocks the invoke path on a write(2); lines gathered up
 * to LOG_MIN_WRITE_BYTES, but never held longer than LOG_FLUSH_MS. pino flushes what is left
 * when the process exits.
 */
export function gatewayLogDestination(): GatewayLogDestination {
  const destination = pino.destination({ sync: false, minLength: LOG_MIN_WRITE_BYTES });
  const flushTimer = setInterval(() => {
    destination.flush();
  }, LOG_FLUSH_MS).unref();
  return {
    destination,
    end: (code) => {
      // The flush timer first: a flush of an ended destination throws (and the exit code would be 1).
      clearInterval(flushTimer);
      return exitAfterFlush(destination, code);
    },
  };
}
