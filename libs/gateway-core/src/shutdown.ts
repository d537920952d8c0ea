/**
 * The gateway's phases from start to exit. `delaying`: told to stop by the kubelet, it still
 * accepts and serves (the Service's endpoints and each node's kube-proxy still send new
 * connections for a moment) but says not ready; `draining`: the listener is closed and the
 * requests in flight finish, bounded by the drain.
 */
export type ShutdownPhase = 'serving' | 'delaying' | 'draining';

/** What the gateway does in a phase. */
export interface PhaseConduct {
  /** GET /readyz answers 200 (else 503). */
  ready: boolean;
  /** The listener takes new connections. */
  accepting: boolean;
  /**
   * Answers leave the connection open. False once stopping: every answer says
   * `Connection: close`, so a keep-alive client reconnects (through kube-proxy, to a
   * ready replica once the endpoints moved) instead of racing the close of its idle socket.
   */
  keepAlive: boolean;
}

const CONDUCT: Record<ShutdownPhase, PhaseConduct> = {
  serving: { ready: true, accepting: true, keepAlive: true },
  delaying: { ready: false, accepting: true, keepAlive: false },
  draining: { ready: false, accepting: false, keepAlive: false },
};

export function conductOf(phase: ShutdownPhase): PhaseConduct {
  return CONDUCT[phase];
}

/**
 * How long the gateway keeps accepting after a stop signal: SIGTERM (the kubelet) waits
 * `delaySeconds` for the endpoints to drop it; SIGINT (a person, Ctrl-C) or no signal (a
 * test, an embedder) stops at once.
 */
export function decideShutdownDelayMs(signal: NodeJS.Signals | undefined, delaySeconds: number): number {
  if (signal !== 'SIGTERM') return 0;
  return Math.max(0, delaySeconds) * 1000;
}
