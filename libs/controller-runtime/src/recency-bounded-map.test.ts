import { RecencyBoundedMap } from './recency-bounded-map.ts';

test.each([
  ['under the capacity: everything stays, in set order', 3, ['a', 'b'], ['a', 'b']],
  ['at the capacity', 2, ['a', 'b'], ['a', 'b']],
  ['over it: the least recently set goes', 2, ['a', 'b', 'c'], ['b', 'c']],
  ['setting a key again makes it the most recent', 2, ['a', 'b', 'a', 'c'], ['a', 'c']],
  ['a capacity of 0 keeps nothing', 0, ['a', 'b'], []],
] as const)('%s', (_name, capacity, keys, expected) => {
  const map = new RecencyBoundedMap<string, string>(capacity);
  for (const key of keys) map.set(key, key);
  expect(map.values()).toEqual(expected);
  expect(map.size).toBe(expected.length);
});

test('get and delete', () => {
  const map = new RecencyBoundedMap<string, number>(2);
  map.set('a', 1);
  expect(map.get('a')).toBe(1);
  map.delete('a');
  expect(map.get('a')).toBeUndefined();
  expect(map.size).toBe(0);
});
