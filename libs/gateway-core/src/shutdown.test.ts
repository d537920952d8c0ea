import { conductOf, decideShutdownDelayMs } from './shutdown.ts';
import type { PhaseConduct, ShutdownPhase } from './shutdown.ts';

describe('conductOf', () => {
  it.each<[ShutdownPhase, PhaseConduct]>([
    ['serving', { ready: true, accepting: true, keepAlive: true }],
    // The endpoints still send new connections: accepted and served, but not ready.
    ['delaying', { ready: false, accepting: true, keepAlive: false }],
    ['draining', { ready: false, accepting: false, keepAlive: false }],
  ])('%s', (phase, conduct) => {
    expect(conductOf(phase)).toEqual(conduct);
  });
});

describe('decideShutdownDelayMs', () => {
  it.each<[string, NodeJS.Signals | undefined, number, number]>([
    ['SIGTERM (the kubelet): the delay', 'SIGTERM', 5, 5_000],
    ['SIGTERM with no delay configured', 'SIGTERM', 0, 0],
    ['SIGTERM with a fraction of a second', 'SIGTERM', 0.5, 500],
    ['SIGINT (a person): at once', 'SIGINT', 5, 0],
    ['no signal (a caller stopping it): at once', undefined, 5, 0],
    ['a negative delay is none', 'SIGTERM', -1, 0],
  ])('%s', (_what, signal, delaySeconds, delayMs) => {
    expect(decideShutdownDelayMs(signal, delaySeconds)).toBe(delayMs);
  });
});
