/**
 * How long past an invocation's timeout each hop of the invoke path waits for the next
 * hop's answer before it gives up itself. The hop nearer the client waits longer than the
 * one it calls: whichever hop gives up first (the owner on a hung Runtime Server, a peer
 * hop on a silent owner) answers with a typed error naming the cause, and that answer has
 * the difference of margins to travel back before the caller's own deadline fires.
 * Every hop counts from the same timeout (the gateway sends it, runtimed may only lower it).
 */
export const INVOCATION_DEADLINE_MARGINS_MS = {
  /** The owner runtimed's call to its Runtime Server, which answers InvocationTimeout itself at the timeout. */
  runtimeServer: 5_000,
  /** A receiving runtimed's one hop to the owner runtimed. */
  peerHop: 10_000,
  /** The gateway's call to a runtimed (which serves the invocation or takes the peer hop). */
  gateway: 15_000,
} as const;

export type InvocationHop = keyof typeof INVOCATION_DEADLINE_MARGINS_MS;

/** The hops from the client inwards; each margin must exceed the next one's. */
export const INVOCATION_HOPS: readonly InvocationHop[] = ['gateway', 'peerHop', 'runtimeServer'];

/** When a hop gives up on the next one: the invocation's timeout plus that hop's margin. */
export function invocationDeadlineMs(hop: InvocationHop, timeoutMs: number): number {
  return timeoutMs + INVOCATION_DEADLINE_MARGINS_MS[hop];
}
