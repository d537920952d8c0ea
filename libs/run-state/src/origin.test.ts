import { isExecutedElsewhere } from './origin.ts';

describe('isExecutedElsewhere', () => {
  it.each([
    ['a Run without origin is executed by the platform', {}, false],
    [
      'a Run with spec.origin.local was executed by krt run --local',
      {
        origin: {
          local: {
            runId: '20260601-110000-a1b2c3',
            lockDigest: `sha256:${'a'.repeat(64)}`,
            result: { phase: 'Succeeded' as const, reason: 'Succeeded', message: 'completed', startTime: 't', completionTime: 't' },
          },
        },
      },
      true,
    ],
  ])('%s', (_what, spec, expected) => {
    expect(isExecutedElsewhere(spec)).toBe(expected);
  });
});
