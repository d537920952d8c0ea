// @peculiar/x509 v2 registers its algorithms with tsyringe, which refuses to load unless a
// Reflect metadata API exists (it only reads `design:paramtypes`, which nothing here emits,
// and the `injectionTokens` it writes itself). The polyfill packages are not dependencies of
// this workspace, so this module installs the four functions tsyringe calls, backed by a
// WeakMap, and only when no polyfill is present (a real one, loaded first, wins).
// It must be imported before '@peculiar/x509' (see x509.ts).

type MetadataTarget = object;
type MetadataMap = Map<unknown, unknown>;

interface ReflectMetadataApi {
  getMetadata?: (key: unknown, target: MetadataTarget) => unknown;
  getOwnMetadata?: (key: unknown, target: MetadataTarget) => unknown;
  defineMetadata?: (key: unknown, value: unknown, target: MetadataTarget) => void;
  hasMetadata?: (key: unknown, target: MetadataTarget) => boolean;
}

const reflect = Reflect as unknown as ReflectMetadataApi;

if (typeof reflect.getMetadata !== 'function') {
  const store = new WeakMap<MetadataTarget, MetadataMap>();
  const own = (target: MetadataTarget): MetadataMap | undefined => store.get(target);
  const lookup = (key: unknown, target: MetadataTarget): unknown => {
    // Walk the prototype chain like reflect-metadata's getMetadata.
    for (let t: MetadataTarget | null = target; t !== null; t = Reflect.getPrototypeOf(t)) {
      const map = own(t);
      if (map?.has(key) === true) return map.get(key);
    }
    return undefined;
  };
  reflect.getOwnMetadata = (key, target) => own(target)?.get(key);
  reflect.getMetadata = lookup;
  reflect.hasMetadata = (key, target) => lookup(key, target) !== undefined;
  reflect.defineMetadata = (key, value, target) => {
    let map = own(target);
    if (map === undefined) {
      map = new Map();
      store.set(target, map);
    }
    map.set(key, value);
  };
}

export {};
