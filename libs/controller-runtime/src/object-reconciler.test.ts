import { asReconciler } from './object-reconciler.ts';
import type { AsReconcilerOptions, ObjectRef } from './object-reconciler.ts';
import type { ReadonlyDeep } from './object-key.ts';

interface Thing {
  metadata: { name: string; namespace?: string; deletionTimestamp?: string };
  spec: { size: number };
}

const thing = (name: string, namespace: string | undefined, deleting = false): Thing => ({
  metadata: { name, ...(namespace === undefined ? {} : { namespace }), ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
  spec: { size: 1 },
});

/** A fake informer: its get, by namespace and name. */
function cacheOf(things: Thing[]): { get(name: string, namespace?: string): ReadonlyDeep<Thing> | undefined } {
  return {
    get: (name, namespace) => things.find((t) => t.metadata.name === name && (t.metadata.namespace ?? '') === (namespace ?? '')),
  };
}

interface Scenario {
  name: string;
  cached: Thing[];
  key: string;
  options?: AsReconcilerOptions;
  expected: { reconciled?: ObjectRef; gone?: ObjectRef; result: { requeueAfterMs?: number } | undefined };
}

const scenarios: Scenario[] = [
  {
    name: 'a cached object is handed over, with its key split',
    cached: [thing('a', 'ns')],
    key: 'ns/a',
    expected: { reconciled: { key: 'ns/a', namespace: 'ns', name: 'a' }, result: { requeueAfterMs: 5 } },
  },
  {
    name: 'a cluster-scoped key: namespace empty',
    cached: [thing('a', undefined)],
    key: 'a',
    expected: { reconciled: { key: 'a', namespace: '', name: 'a' }, result: { requeueAfterMs: 5 } },
  },
  {
    name: 'not in the cache: gone, not requeued',
    cached: [thing('a', 'other')],
    key: 'ns/a',
    expected: { gone: { key: 'ns/a', namespace: 'ns', name: 'a' }, result: undefined },
  },
  {
    name: 'being deleted: gone by default',
    cached: [thing('a', 'ns', true)],
    key: 'ns/a',
    expected: { gone: { key: 'ns/a', namespace: 'ns', name: 'a' }, result: undefined },
  },
  {
    name: 'being deleted, deleting reconciled: handed over',
    cached: [thing('a', 'ns', true)],
    key: 'ns/a',
    options: { deleting: 'reconcile' },
    expected: { reconciled: { key: 'ns/a', namespace: 'ns', name: 'a' }, result: { requeueAfterMs: 5 } },
  },
];

test.each(scenarios)('$name', async ({ cached, key, options, expected }) => {
  const seen: { reconciled?: ObjectRef; gone?: ObjectRef } = {};
  const reconcile = asReconciler<Thing>(
    cacheOf(cached),
    {
      reconcile: (object, ref) => {
        seen.reconciled = ref;
        expect(object.metadata.name).toBe(ref.name);
        return Promise.resolve({ requeueAfterMs: 5 });
      },
      gone: (ref) => {
        seen.gone = ref;
      },
    },
    options,
  );
  const result = await reconcile(key, new AbortController().signal);
  expect({ ...seen, result }).toEqual(expected);
});

test('without gone, a missing object is simply not reconciled', async () => {
  const reconcile = asReconciler<Thing>(cacheOf([]), { reconcile: () => Promise.reject(new Error('not to be called')) });
  await expect(reconcile('ns/a', new AbortController().signal)).resolves.toBeUndefined();
});

test("the reconciler's error is the key's: the Controller requeues it", async () => {
  const failure = new Error('write failed');
  const reconcile = asReconciler<Thing>(cacheOf([thing('a', 'ns')]), { reconcile: () => Promise.reject(failure) });
  await expect(reconcile('ns/a', new AbortController().signal)).rejects.toBe(failure);
});
