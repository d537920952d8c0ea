import { overlappingServing, parseServed } from './serving-overlap.ts';
import type { ServedInvocation } from './serving-overlap.ts';

const at = (podUID: string, attempt: number, time: number, runUid = 'run-1'): ServedInvocation => ({
  podUID,
  runUid,
  attempt,
  invocationId: `${podUID}-${String(time)}`,
  time,
});

describe('overlappingServing', () => {
  test.each<[string, ServedInvocation[], number]>([
    ['nothing served', [], 0],
    ['one registration', [at('a', 1, 1), at('a', 1, 5), at('a', 1, 9)], 0],
    ['a hand-over: the old owner stopped before the new one started', [at('a', 1, 1), at('a', 1, 5), at('b', 2, 6), at('b', 2, 9)], 0],
    ['a hand-over in the same millisecond', [at('a', 1, 1), at('a', 1, 5), at('b', 2, 5)], 0],
    ['the old owner served again after the new one began', [at('a', 1, 1), at('b', 2, 3), at('a', 1, 5)], 1],
    ['the same Pod at two attempts, interleaved', [at('a', 1, 1), at('a', 2, 2), at('a', 1, 3)], 1],
    ['three registrations, all overlapping', [at('a', 1, 1), at('b', 2, 2), at('c', 3, 3), at('a', 1, 9), at('b', 2, 9)], 3],
    [
      'two Runs served by two Pods at once',
      [at('a', 1, 1, 'run-1'), at('b', 1, 2, 'run-2'), at('a', 1, 3, 'run-1'), at('b', 1, 4, 'run-2')],
      0,
    ],
  ])('%s: %i violations', (_, served, expected) => {
    expect(overlappingServing(served)).toHaveLength(expected);
  });

  test('a violation names the Run, both registrations and their intervals', () => {
    expect(overlappingServing([at('a', 1, 0), at('b', 2, 1000), at('a', 1, 2000)])).toEqual([
      'Run run-1: Pod a attempt 1 served 2 invocations in [1970-01-01T00:00:00.000Z, 1970-01-01T00:00:02.000Z] and Pod b attempt 2 served 1 in [1970-01-01T00:00:01.000Z, 1970-01-01T00:00:01.000Z]',
    ]);
  });
});

describe('parseServed', () => {
  test('takes the invocation lines of a Runtime Server log, succeeded and failed', () => {
    const log = [
      '{"level":30,"time":10,"msg":"registered","runUid":"r","attempt":1,"registrationId":"x"}',
      '{"level":30,"time":20,"msg":"invocation succeeded","runUid":"r","attempt":1,"invocationId":"i-1","durationMs":1}',
      'not json: a Python traceback line',
      '{"level":30,"time":30,"msg":"invocation failed","runUid":"r","attempt":1,"invocationId":"i-2","code":"HandlerError"}',
      '',
    ].join('\n');
    expect(parseServed('pod', log)).toEqual([
      { podUID: 'pod', runUid: 'r', attempt: 1, invocationId: 'i-1', time: 20 },
      { podUID: 'pod', runUid: 'r', attempt: 1, invocationId: 'i-2', time: 30 },
    ]);
  });

  test('an invocation line without its Run, attempt or time is an error, not skipped', () => {
    expect(() => parseServed('pod', '{"time":20,"msg":"invocation succeeded","attempt":1}')).toThrow(/without runUid/);
  });
});
