/** Milliseconds since the Unix epoch. Injected so that the table is tested without time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
