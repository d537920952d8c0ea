import { parseDurationMs } from './duration.ts';

describe('parseDurationMs', () => {
  it.each([
    ['60s', 60_000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['45', 45_000],
    ['1h1m1s1ms', 3_661_001],
    ['', undefined],
    ['s', undefined],
    ['10d', undefined],
    ['-5s', undefined],
    ['5 s', undefined],
  ] as const)('%s -> %s', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });
});
