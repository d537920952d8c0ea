import { DEV_RESTART_POLICY, decideRestart, describeExit } from './dev-restart.ts';

describe('decideRestart (DEV_RESTART_POLICY: 1 s doubling to 30 s; 5 exits within 2 min stop everything)', () => {
  const s = 1000;
  it.each([
    ['the first exit: restart after 1 s', [100 * s], 100 * s, { action: 'restart', delayMs: 1 * s, recentExits: 1 }],
    ['the second within the window: 2 s', [100 * s, 110 * s], 110 * s, { action: 'restart', delayMs: 2 * s, recentExits: 2 }],
    ['the fourth: 8 s', [0, 10 * s, 20 * s, 30 * s], 30 * s, { action: 'restart', delayMs: 8 * s, recentExits: 4 }],
    ['the fifth within 2 min: a crash loop, stop', [0, 10 * s, 20 * s, 30 * s, 40 * s], 40 * s, { action: 'stop', recentExits: 5 }],
    [
      'exits older than the window are forgotten: back to 1 s',
      [0, 10 * s, 20 * s, 30 * s, 200 * s],
      200 * s,
      { action: 'restart', delayMs: 1 * s, recentExits: 1 },
    ],
    [
      'five exits spread over more than 2 min are no crash loop (the 2 min before the last hold 3)',
      [0, 40 * s, 80 * s, 120 * s, 160 * s],
      160 * s,
      { action: 'restart', delayMs: 4 * s, recentExits: 3 },
    ],
  ])('%s', (_name, exits, now, expected) => {
    expect(decideRestart(exits, now)).toEqual(expected);
  });

  it('caps the back-off at maxBackoffMs', () => {
    const policy = { ...DEV_RESTART_POLICY, crashLoopExits: 100 };
    const exits = Array.from({ length: 10 }, (_, i) => i * s);
    expect(decideRestart(exits, 9 * s, policy)).toEqual({ action: 'restart', delayMs: 30 * s, recentExits: 10 });
  });
});

describe('describeExit', () => {
  it.each([
    [1, null, 'exit code 1'],
    [0, undefined, 'exit code 0'],
    [null, 'SIGKILL', 'signal SIGKILL'],
  ])('%s %s', (code, signal, expected) => {
    expect(describeExit(code, signal)).toBe(expected);
  });
});
