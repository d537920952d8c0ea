import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import type { V1ConfigMap, V1OwnerReference, V1Secret, V1Service, V1ServiceSpec } from '@kubernetes/client-node';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { ensureOwned, specHashed } from '../src/index.ts';
import type { ControllerLogger, ControllerOwner, DesiredObject, EnsureOwnedResult, IdentifiedObject, ReadonlyDeep } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const client = KubernetesObjectApi.makeApiClient(admin);
const HASH = 'example.com/spec-hash';

let namespace: TestNamespace;
let fenced: object[];
const logger: ControllerLogger = {
  error: () => undefined,
  debug: (object, message) => fenced.push({ ...object, message }),
};
/** A real owner, so that the garbage collector keeps what it owns while the test runs. */
let owner: ControllerOwner & { name: string };

beforeEach(async () => {
  fenced = [];
  namespace = await cluster.createNamespace({ prefix: 'ensure-owned' });
  const created = await core.createNamespacedConfigMap({ namespace: namespace.name, body: { metadata: { name: 'owner' } } });
  owner = { kind: 'ConfigMap', name: 'owner', uid: created.metadata?.uid ?? '' };
});

afterEach(async () => {
  await namespace.delete();
});

type Named<T> = T & IdentifiedObject;

function ownerReferences(): V1OwnerReference[] {
  return [{ apiVersion: 'v1', kind: owner.kind, name: owner.name, uid: owner.uid, controller: true }];
}

function service(hash: string, port: number): Named<V1Service> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'svc', namespace: namespace.name, annotations: { [HASH]: hash }, ownerReferences: ownerReferences() },
    spec: { selector: { app: 'x' }, ports: [{ name: 'p', port, targetPort: 'p' }] },
  };
}

/** The clusterIP is allocated by the API server and never changes: a replacement keeps it. */
function keepClusterIp(desired: Named<V1Service>, current: ReadonlyDeep<V1Service>): V1Service {
  const merged = structuredClone(desired);
  merged.spec = Object.assign(structuredClone(current.spec) as V1ServiceSpec, desired.spec);
  return merged;
}

async function ensureService(cached: V1Service | undefined, hash: string, port: number): Promise<EnsureOwnedResult> {
  return ensureOwned<V1Service>({
    client,
    logger,
    owner,
    cached,
    desired: specHashed<V1Service>(service(hash, port), HASH, keepClusterIp),
  });
}

test('creates what is missing, keeps what is up to date, replaces what changed (fenced on the version read), and keeps the clusterIP', async () => {
  expect(await ensureService(undefined, 'h1', 80)).toEqual({ outcome: 'created' });
  const created = await core.readNamespacedService({ namespace: namespace.name, name: 'svc' });
  expect(created.metadata?.ownerReferences).toEqual([expect.objectContaining({ uid: owner.uid, controller: true })]);

  // A cache that has not seen the create yet: the read behind the 409 tells it is ours.
  expect(await ensureService(undefined, 'h1', 80)).toEqual({ outcome: 'exists' });
  expect(await ensureService(created, 'h1', 80)).toEqual({ outcome: 'unchanged' });
  const unchanged = await core.readNamespacedService({ namespace: namespace.name, name: 'svc' });
  expect(unchanged.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);

  expect(await ensureService(created, 'h2', 81)).toEqual({ outcome: 'replaced' });
  const replaced = await core.readNamespacedService({ namespace: namespace.name, name: 'svc' });
  expect(replaced.spec?.ports?.map((p) => p.port)).toEqual([81]);
  expect(replaced.spec?.clusterIP).toBe(created.spec?.clusterIP);
  expect(replaced.metadata?.annotations?.[HASH]).toBe('h2');

  // Decided from the version before the replace: refused by the server, nothing written.
  expect(await ensureService(created, 'h3', 82)).toEqual({ outcome: 'fenced' });
  expect(fenced).toEqual([expect.objectContaining({ object: `Service ${namespace.name}/svc` })]);
  const after = await core.readNamespacedService({ namespace: namespace.name, name: 'svc' });
  expect(after.metadata?.resourceVersion).toBe(replaced.metadata?.resourceVersion);
});

test("another's object is never adopted nor changed, whether the cache has it or not", async () => {
  const theirs = await core.createNamespacedConfigMap({
    namespace: namespace.name,
    body: { metadata: { name: 'taken', annotations: { [HASH]: 'theirs' } }, data: { mine: 'no' } },
  });
  const desired = specHashed<V1ConfigMap>(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'taken', namespace: namespace.name, annotations: { [HASH]: 'ours' }, ownerReferences: ownerReferences() },
      data: { mine: 'yes' },
    },
    HASH,
  );
  const refused = {
    outcome: 'refused',
    reason: 'NotControlled',
    message: `ConfigMap ${namespace.name}/taken exists and is not controlled by this ConfigMap; rename the ConfigMap or remove the ConfigMap`,
  };
  expect(await ensureOwned({ client, logger, owner, cached: undefined, desired })).toEqual(refused);
  expect(await ensureOwned({ client, logger, owner, cached: theirs, desired })).toEqual(refused);
  const after = await core.readNamespacedConfigMap({ namespace: namespace.name, name: 'taken' });
  expect(after.metadata?.resourceVersion).toBe(theirs.metadata?.resourceVersion);
  expect(after.metadata?.ownerReferences).toBeUndefined();
  expect(after.data).toEqual({ mine: 'no' });
});

test('an object that only a delete could change is refused with the reason, not written', async () => {
  const opaque = await core.createNamespacedSecret({
    namespace: namespace.name,
    body: { metadata: { name: 'tls', ownerReferences: ownerReferences() }, type: 'Opaque', data: { x: 'eA==' } },
  });
  let built = 0;
  const desired: DesiredObject<V1Secret> = {
    apiVersion: 'v1',
    kind: 'Secret',
    namespace: namespace.name,
    name: 'tls',
    upToDate: () => false,
    immutable: (current) => (current.type === 'kubernetes.io/tls' ? undefined : `type ${current.type ?? ''}; delete it`),
    build: () => {
      built += 1;
      return { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tls', namespace: namespace.name }, type: 'kubernetes.io/tls' };
    },
  };
  expect(await ensureOwned({ client, logger, owner, cached: opaque, desired })).toEqual({
    outcome: 'refused',
    reason: 'Immutable',
    message: 'type Opaque; delete it',
  });
  expect(built).toBe(0);
  expect((await core.readNamespacedSecret({ namespace: namespace.name, name: 'tls' })).metadata?.resourceVersion).toBe(
    opaque.metadata?.resourceVersion,
  );
});
