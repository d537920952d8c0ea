/** `namespace/name` (or `name` for cluster-scoped objects), as client-go's MetaNamespaceKeyFunc. */
export function objectKey(object: { metadata?: { name?: string; namespace?: string } }): string {
  const name = object.metadata?.name ?? '';
  const namespace = object.metadata?.namespace;
  return namespace === undefined || namespace === '' ? name : `${namespace}/${name}`;
}

export function splitObjectKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export type { ReadonlyDeep } from '@kruntimes/api';
