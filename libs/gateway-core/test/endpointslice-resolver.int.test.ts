import { DiscoveryV1Api } from '@kubernetes/client-node';
import type { V1Endpoint } from '@kubernetes/client-node';
import { Cluster, NamespaceAccess, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { pino } from 'pino';
import { EndpointSliceResolver, GATEWAY_ENDPOINTSLICE_RBAC_RULES } from '../src/index.ts';

/**
 * The EndpointSlice resolver against a real API server, with exactly its RBAC (list and watch
 * of endpointslices). No EndpointSlice controller runs here: the slices are written as it
 * would write them (the Service's labels copied, `kubernetes.io/service-name`), with
 * addresses outside loopback, which the API server refuses in slices; nothing is dialled.
 */
const cluster = Cluster.fromEnvironment();
const discovery = cluster.kubeConfig().makeApiClient(DiscoveryV1Api);
const LABELS = { 'kruntimes.io/runtime': 'py', 'app.kubernetes.io/component': 'runtime' };

let namespace: TestNamespace;
let resolver: EndpointSliceResolver;

const endpoint = (ip: string, pod: string, ready: boolean): V1Endpoint => ({
  addresses: [ip],
  conditions: { ready },
  targetRef: { kind: 'Pod', name: pod },
});

async function slice(name: string, service: string, endpoints: V1Endpoint[], labels: Record<string, string> = LABELS): Promise<void> {
  await discovery.createNamespacedEndpointSlice({
    namespace: namespace.name,
    body: {
      metadata: { name, labels: { ...labels, 'kubernetes.io/service-name': service } },
      addressType: 'IPv4',
      ports: [
        { name: 'grpc', port: 7443, protocol: 'TCP' },
        { name: 'peer', port: 7444, protocol: 'TCP' },
      ],
      endpoints,
    },
  });
}

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'gateway-slices', waitForDefaultServiceAccount: true });
  await slice('py-1', 'py', [endpoint('10.1.0.1', 'py-a', true), endpoint('10.1.0.3', 'py-c', false)]);
  await slice('py-2', 'py', [endpoint('10.1.0.2', 'py-b', true)]);
  await slice('other-1', 'other', [endpoint('10.1.0.4', 'other-a', true)], { ...LABELS, 'kruntimes.io/runtime': 'other' });
  // Not a Runtime's Service: its slice is not even in the cache.
  await slice('unrelated-1', 'unrelated', [endpoint('10.1.0.5', 'unrelated-a', true)], { app: 'unrelated' });
  const kubeConfig = await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig(
    'gateway',
    GATEWAY_ENDPOINTSLICE_RBAC_RULES,
  );
  resolver = new EndpointSliceResolver({ kubeConfig, namespace: namespace.name, logger: pino({ level: 'silent' }) });
  await resolver.start();
});

afterAll(async () => {
  await resolver.stop();
  await namespace.delete();
});

test("every ready endpoint of the Runtime's Service slices, by Pod IP at the grpc port, rotated round-robin", async () => {
  const first = await resolver.resolve(namespace.name, 'py');
  expect(first.map((u) => u.address).sort()).toEqual(['10.1.0.1:7443', '10.1.0.2:7443']);
  expect(first.map((u) => u.ip).sort()).toEqual(['10.1.0.1', '10.1.0.2']);
  const second = await resolver.resolve(namespace.name, 'py');
  expect(second[0]?.address).not.toBe(first[0]?.address);
  expect(second.map((u) => u.pod).sort()).toEqual(['py-a', 'py-b']);
  expect((await resolver.resolve(namespace.name, 'other')).map((u) => u.pod)).toEqual(['other-a']);
  expect(await resolver.resolve(namespace.name, 'unrelated')).toEqual([]);
  expect(await resolver.resolve(namespace.name, 'missing')).toEqual([]);
});

test('the cache follows readiness and deletion from the watch', async () => {
  await discovery.patchNamespacedEndpointSlice({
    namespace: namespace.name,
    name: 'py-1',
    body: [{ op: 'replace', path: '/endpoints/1/conditions/ready', value: true }],
  });
  await waitFor(
    'py-c to become an endpoint',
    async () => ((await resolver.resolve(namespace.name, 'py')).length === 3 ? true : undefined),
    { timeoutMs: 10_000, intervalMs: 50 },
  );
  await discovery.deleteNamespacedEndpointSlice({ namespace: namespace.name, name: 'py-2' });
  await waitFor(
    'py-b to leave the endpoints',
    async () => {
      const pods = (await resolver.resolve(namespace.name, 'py')).map((u) => u.pod).sort();
      return pods.join(',') === 'py-a,py-c' ? true : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 50 },
  );
});
