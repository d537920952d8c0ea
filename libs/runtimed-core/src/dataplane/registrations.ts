/**
 * What the data plane asks of the reconciler, which registers this Pod's function epochs
 * on the local Runtime Server and hands them over at a drain. Read on every invocation:
 * both answers come from the reconciler's local state, never from the API server.
 */
export interface Registrations {
  /** The registration this runtimed holds for exactly (Run UID, attempt), if any: an invocation runs here only with it. */
  registrationFor(runUid: string, attempt: number): string | undefined;
  /**
   * Admits one local invocation of (Run UID, attempt) and returns its release, or undefined
   * while this Pod hands the Run over (a drain): counted so that the handover waits for
   * every invocation it admitted before it unregisters.
   */
  admitInvocation(runUid: string, attempt: number): (() => void) | undefined;
}
