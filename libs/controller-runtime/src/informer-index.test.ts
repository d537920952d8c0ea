import { InformerIndexes } from './informer-index.ts';

interface Item {
  metadata: { name: string; namespace?: string };
  tags: string[];
}

const item = (name: string, tags: string[], namespace = 'ns'): Item => ({ metadata: { name, namespace }, tags });
const names = (items: readonly Item[]): string[] => items.map((i) => i.metadata.name).sort();

function indexes(): InformerIndexes<Item> {
  const built = new InformerIndexes<Item>();
  built.add('tag', (i) => i.tags);
  return built;
}

describe('InformerIndexes', () => {
  const cases: [string, (ix: InformerIndexes<Item>) => void, Record<string, string[]>][] = [
    [
      'an object under each of its values',
      (ix) => {
        ix.upsert(item('a', ['x', 'y']));
      },
      { x: ['a'], y: ['a'], z: [] },
    ],
    [
      'an object under no value is in no list',
      (ix) => {
        ix.upsert(item('a', []));
      },
      { x: [] },
    ],
    [
      'an update moves the object to its new values',
      (ix) => {
        ix.upsert(item('a', ['x']));
        ix.upsert(item('a', ['y']));
      },
      { x: [], y: ['a'] },
    ],
    [
      'a delete removes it from every value',
      (ix) => {
        ix.upsert(item('a', ['x', 'y']));
        ix.upsert(item('b', ['x']));
        ix.delete(item('a', []));
      },
      { x: ['b'], y: [] },
    ],
    [
      'deleting an unknown object changes nothing',
      (ix) => {
        ix.delete(item('a', ['x']));
      },
      { x: [] },
    ],
    [
      'the same name in two namespaces is two objects',
      (ix) => {
        ix.upsert(item('a', ['x'], 'one'));
        ix.upsert(item('a', ['x'], 'two'));
      },
      { x: ['a', 'a'] },
    ],
  ];
  it.each(cases)('%s', (_name, act, expected) => {
    const ix = indexes();
    act(ix);
    for (const [value, wanted] of Object.entries(expected)) {
      expect(names(ix.get('tag', value))).toEqual(wanted);
      expect(ix.count('tag', value)).toBe(wanted.length);
    }
  });

  it('adds an index of a name once (shared caches ask alike)', () => {
    const ix = indexes();
    ix.add('tag', () => ['other']);
    expect(ix.size).toBe(1);
    ix.upsert(item('a', ['x']));
    expect(names(ix.get('tag', 'x'))).toEqual(['a']);
  });

  it('files what a cache already holds into an index added late, and keeps it up to date from then on', () => {
    const ix = indexes();
    ix.upsert(item('a', ['x']));
    ix.upsert(item('b', ['y']));
    ix.add('first', (i) => i.tags.slice(0, 1).map((tag) => `first-${tag}`));
    expect(names(ix.get('first', 'first-x'))).toEqual(['a']);
    ix.upsert(item('a', ['y']));
    expect(names(ix.get('first', 'first-x'))).toEqual([]);
    expect(names(ix.get('first', 'first-y'))).toEqual(['a', 'b']);
  });

  it('refuses an unknown index', () => {
    expect(() => indexes().get('none', 'x')).toThrow(/no index none/);
  });
});
