import { AssumeCache } from './assume-cache.ts';

const NOW = 1_000_000;

describe('AssumeCache', () => {
  it.each<[string, (cache: AssumeCache) => void, string | undefined, [string, string][]]>([
    ['counts a bind the cache still shows at the fenced version', () => undefined, '10', [['run', 'pod']]],
    ['drops it once the cache shows any other version (at or after the fenced write)', () => undefined, '11', []],
    ['drops it once the Run is gone from the cache', () => undefined, undefined, []],
    [
      'drops it when the write was refused',
      (cache) => {
        cache.forget('run');
      },
      '10',
      [],
    ],
    [
      'drops it on a watch update with another version',
      (cache) => {
        cache.observe('run', '11');
      },
      '10',
      [],
    ],
    [
      'keeps it on a watch event of the fenced version itself',
      (cache) => {
        cache.observe('run', '10');
      },
      '10',
      [['run', 'pod']],
    ],
    [
      'drops it when the Run is deleted',
      (cache) => {
        cache.deleted('run');
      },
      '10',
      [],
    ],
    [
      'keeps an uncertain write until it expires',
      (cache) => {
        cache.uncertain('run', NOW + 1);
      },
      '10',
      [['run', 'pod']],
    ],
    [
      'drops an uncertain write once it expired',
      (cache) => {
        cache.uncertain('run', NOW);
      },
      '10',
      [],
    ],
  ])('%s', (_name, act, cachedVersion, expected) => {
    const cache = new AssumeCache();
    cache.assume('ns/python', 'run', 'pod', '10');
    act(cache);
    expect([...cache.snapshot('ns/python', () => cachedVersion, NOW).assumed]).toEqual(expected);
  });

  it('reports the earliest expiry of uncertain writes, so the pass looks again then', () => {
    const cache = new AssumeCache();
    cache.assume('ns/python', 'a', 'p1', '1');
    cache.assume('ns/python', 'b', 'p1', '2');
    cache.assume('ns/python', 'c', 'p1', '3');
    cache.uncertain('a', NOW + 500);
    cache.uncertain('b', NOW + 200);
    const versions: Record<string, string> = { a: '1', b: '2', c: '3' };
    expect(cache.snapshot('ns/python', (uid) => versions[uid], NOW).nextExpiryMs).toBe(NOW + 200);
  });

  it('only returns the assumptions of the Runtime asked about, and keeps the others', () => {
    const cache = new AssumeCache();
    cache.assume('ns/python', 'a', 'p1', '1');
    cache.assume('ns/bash', 'b', 'p2', '2');
    expect([...cache.snapshot('ns/python', () => undefined, NOW).assumed]).toEqual([]);
    expect([...cache.snapshot('ns/bash', () => '2', NOW).assumed]).toEqual([['b', 'p2']]);
    expect(cache.size).toBe(1);
  });
});

describe('AssumeCache.inNamespace', () => {
  it('lists the Runs assumed in the Runtimes of one namespace only', () => {
    const cache = new AssumeCache();
    cache.assume('ns/a', 'r1', 'p', '1');
    cache.assume('ns/b', 'r2', 'p', '1');
    cache.assume('ns2/a', 'r3', 'p', '1');
    cache.assume('n/a', 'r4', 'p', '1');
    expect(cache.inNamespace('ns')).toEqual(['r1', 'r2']);
  });
});
