import ts from 'typescript';
import { NO_MARKERS, addMarkers, layerMarkers } from './layer-markers.ts';
import type { LayerMarkers } from './layer-markers.ts';

const markersOf = (file: string, text: string): LayerMarkers =>
  layerMarkers(file, ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS));

describe('layerMarkers', () => {
  it.each<[string, string, string, Partial<LayerMarkers>]>([
    ['a double cast', 'libs/a/src/x.ts', 'const y = x as unknown as Run;', { doubleCasts: 1 }],
    ['a single cast is not one', 'libs/a/src/x.ts', 'const y = x as Run;', {}],
    ['an alias with KubernetesObject', 'libs/a/src/x.ts', 'type RunObject = Run & KubernetesObject;', { kubernetesObjectAliases: 1 }],
    ['the layer may alias', 'libs/controller-runtime/src/x.ts', 'type Cached<T> = T & KubernetesObject;', {}],
    [
      'a reconcile method splitting its key',
      'libs/a/src/x.ts',
      'class C { async reconcile(key) { splitObjectKey(key); } }',
      { reconcileOpenings: 1 },
    ],
    [
      'a reconcile arrow field',
      'libs/a/src/x.ts',
      'class C { readonly reconcile = async (key) => { splitObjectKey(key); }; }',
      { reconcileOpenings: 1 },
    ],
    ['splitting a key elsewhere is no opening', 'libs/a/src/x.ts', 'function plan(key) { splitObjectKey(key); }', {}],
    [
      'a nested function inside reconcile is not reconcile',
      'libs/a/src/x.ts',
      'function reconcile() { const f = () => splitObjectKey(k); }',
      {},
    ],
    ['a status write by hand', 'libs/a/src/x.ts', 'await client.replaceStatus(o, s);', { statusWrites: 1 }],
    [
      'a status write handed to fencedWrite',
      'libs/a/src/x.ts',
      'await fencedWrite({ step: () => ({ write: () => c.replaceStatus(o, s) }) });',
      {},
    ],
    ['run-client writes status', 'libs/run-client/src/x.ts', 'await client.replaceStatus(o, s);', {}],
    ['an Event by hand', 'libs/a/src/x.ts', 'await core.createNamespacedEvent({ namespace, body });', { handBuiltEvents: 1 }],
    ['a patched Event by hand', 'libs/a/src/x.ts', 'await core.patchNamespacedEvent({ namespace, name, body });', { handBuiltEvents: 1 }],
    [
      'a metrics listener',
      'libs/a/src/x.ts',
      "import { createServer } from 'node:http';\ncreateServer((q, r) => { if (q.url === '/metrics') r.end(); });",
      { metricsListeners: 1 },
    ],
    ['an http server without /metrics', 'libs/a/src/x.ts', "import { createServer } from 'node:http';\ncreateServer(() => undefined);", {}],
    [
      "controller-runtime's endpoint",
      'libs/controller-runtime/src/x.ts',
      "import { createServer } from 'node:http';\nconst routes = { '/metrics': 1 };",
      {},
    ],
  ])('%s', (_name, file, text, expected) => {
    expect(markersOf(file, text)).toEqual({ ...NO_MARKERS, ...expected });
  });
});

describe('addMarkers', () => {
  it('adds each marker and changes neither side', () => {
    const one = { ...NO_MARKERS, doubleCasts: 1, handBuiltEvents: 2 };
    expect(addMarkers(one, one)).toEqual({ ...NO_MARKERS, doubleCasts: 2, handBuiltEvents: 4 });
    expect(one.doubleCasts).toBe(1);
  });
});
