import type { Duration } from './generated/google/protobuf/duration.ts';

/** google.protobuf.Duration from milliseconds (non-negative, whole ms). */
export function durationFromMillis(millis: number): Duration {
  const whole = Math.max(0, Math.trunc(millis));
  return { seconds: Math.floor(whole / 1000), nanos: (whole % 1000) * 1_000_000 };
}

/** Milliseconds of a google.protobuf.Duration; undefined when unset. Rounds nanos up. */
export function millisFromDuration(duration: Duration | undefined): number | undefined {
  if (duration === undefined) return undefined;
  return duration.seconds * 1000 + Math.ceil(duration.nanos / 1_000_000);
}
