import { AssumeCache } from './assume-cache.ts';

describe('AssumeCache', () => {
  it.each<[string, (cache: AssumeCache) => void, string | undefined, [string, string][]]>([
    ['counts a bind the cache still shows at the fenced version', () => undefined, '10', [['run', 'pod']]],
    ['drops it once the cache shows any other version (at or after the fenced write)', () => undefined, '11', []],
    ['drops it once the Run is gone from the cache', () => undefined, undefined, []],
    ['drops it when the write was refused', (cache) => { cache.forget('run'); }, '10', []],
    ['drops it on a watch update with another version', (cache) => { cache.observe('run', '11'); }, '10', []],
    ['keeps it on a watch event of the fenced version itself', (cache) => { cache.observe('run', '10'); }, '10', [['run', 'pod']]],
    ['drops it when the Run is deleted', (cache) => { cache.deleted('run'); }, '10', []],
  ])('%s', (_name, act, cachedVersion, expected) => {
    const cache = new AssumeCache();
    cache.assume('ns/python', 'run', 'pod', '10');
    act(cache);
    expect([...cache.snapshot('ns/python', () => cachedVersion)]).toEqual(expected);
  });

  it('only returns the assumptions of the Runtime asked about, and keeps the others', () => {
    const cache = new AssumeCache();
    cache.assume('ns/python', 'a', 'p1', '1');
    cache.assume('ns/bash', 'b', 'p2', '2');
    expect([...cache.snapshot('ns/python', () => undefined)]).toEqual([]);
    expect([...cache.snapshot('ns/bash', () => '2')]).toEqual([['b', 'p2']]);
    expect(cache.size).toBe(1);
  });
});
