import { UidPool, parseUidRange } from './uid-pool.ts';

describe('parseUidRange', () => {
  it.each([
    ['100000-100999', { first: 100000, last: 100999 }],
    [' 5-5 ', { first: 5, last: 5 }],
    ['1-1048576', { first: 1, last: 1048576 }],
  ])('%s is a range', (text, range) => {
    expect(parseUidRange(text)).toEqual(range);
  });

  it.each([
    ['', /FIRST-LAST/],
    ['100000', /FIRST-LAST/],
    ['-5-10', /FIRST-LAST/],
    ['a-b', /FIRST-LAST/],
    ['0-10', /within 1-4294967294/],
    ['1-4294967295', /within/],
    ['20-10', /below the first/],
    ['1-1048577', /at most 1048576/],
  ])('%j is refused', (text, message) => {
    const parsed = parseUidRange(text);
    expect(parsed).toBeInstanceOf(Error);
    expect((parsed as Error).message).toMatch(message);
  });
});

describe('UidPool', () => {
  it('hands out each uid once, lowest first, until the range is used up', () => {
    const pool = new UidPool({ first: 10, last: 12 });
    expect([pool.acquire(), pool.acquire(), pool.acquire(), pool.acquire()]).toEqual([10, 11, 12, undefined]);
    expect(pool.held).toBe(3);
  });

  it('reuses a released uid, the lowest released first', () => {
    const pool = new UidPool({ first: 10, last: 13 });
    for (let i = 0; i < 3; i++) pool.acquire();
    pool.release(12);
    pool.release(10);
    expect([pool.acquire(), pool.acquire(), pool.acquire(), pool.acquire()]).toEqual([10, 12, 13, undefined]);
  });

  it('never hands out a retired uid again', () => {
    const pool = new UidPool({ first: 10, last: 11 });
    pool.acquire();
    pool.retire(10);
    expect([pool.acquire(), pool.acquire()]).toEqual([11, undefined]);
    expect(pool.retired).toBe(1);
    expect(pool.held).toBe(1);
  });

  it.each(['release', 'retire'] as const)('%s of a uid not held throws (a double release would hand one uid to two Runs)', (method) => {
    const pool = new UidPool({ first: 10, last: 11 });
    expect(() => {
      pool[method](10);
    }).toThrow('uid 10 is not held');
    pool.acquire();
    pool.release(10);
    expect(() => {
      pool[method](10);
    }).toThrow('not held');
  });
});
