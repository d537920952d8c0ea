import { CoreV1Api } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { Cluster, NamespaceAccess, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { pino } from 'pino';
import { EndpointsResolver, GATEWAY_RBAC_RULES } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const LABELS = { 'kruntimes.io/runtime': 'py', 'app.kubernetes.io/component': 'runtime' };

let namespace: TestNamespace;
let resolver: EndpointsResolver;

/** The gateway's least-privilege identity: list/watch Services and Pods, nothing else. */
async function gatewayKubeConfig(ns: string) {
  return new NamespaceAccess(cluster, ns).serviceAccountKubeConfig('gateway', GATEWAY_RBAC_RULES);
}

/** A Pod as the kubelet would report it (no node runs it: the status is written directly). */
async function pod(name: string, ip: string, ready: boolean, labels: Record<string, string> = LABELS): Promise<V1Pod> {
  const created = await core.createNamespacedPod({
    namespace: namespace.name,
    body: {
      metadata: { name, labels },
      spec: { containers: [{ name: 'runtimed', image: 'kruntimes/runtimed:dev', ports: [{ name: 'grpc', containerPort: 7443 }] }] },
    },
  });
  created.status = { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] };
  return core.replaceNamespacedPodStatus({ namespace: namespace.name, name, body: created });
}

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'gateway-endpoints', waitForDefaultServiceAccount: true });
  await core.createNamespacedService({
    namespace: namespace.name,
    body: {
      metadata: { name: 'py', labels: LABELS },
      spec: {
        selector: LABELS,
        ports: [
          { name: 'grpc', port: 7443, targetPort: 'grpc' },
          { name: 'peer', port: 7444, targetPort: 'peer' },
        ],
      },
    },
  });
  await pod('py-a', '127.0.0.201', true);
  await pod('py-b', '127.0.0.202', true);
  await pod('py-c', '127.0.0.203', false);
  await pod('other', '127.0.0.204', true, { ...LABELS, 'kruntimes.io/runtime': 'other' });
  resolver = new EndpointsResolver({
    kubeConfig: await gatewayKubeConfig(namespace.name),
    namespace: namespace.name,
    logger: pino({ level: 'silent' }),
  });
  await resolver.start();
});

afterAll(async () => {
  await resolver.stop();
  await namespace.delete();
});

test("the ready Pods of the Runtime's Service, on its grpc port, rotated round-robin", async () => {
  const first = await resolver.resolve(namespace.name, 'py');
  expect(first.map((u) => u.address).sort()).toEqual(['127.0.0.201:7443', '127.0.0.202:7443']);
  const second = await resolver.resolve(namespace.name, 'py');
  expect(second[0]?.address).not.toBe(first[0]?.address);
  expect(second.map((u) => u.pod).sort()).toEqual(['py-a', 'py-b']);
});

test("no Service, no endpoint (the other Runtime's Pod is not borrowed)", async () => {
  expect(await resolver.resolve(namespace.name, 'missing')).toEqual([]);
  expect(await resolver.resolve(namespace.name, 'other')).toEqual([]);
});

test('the cache follows readiness and deletion from the watch', async () => {
  const c = await core.readNamespacedPod({ namespace: namespace.name, name: 'py-c' });
  c.status = { phase: 'Running', podIP: '127.0.0.203', podIPs: [{ ip: '127.0.0.203' }], conditions: [{ type: 'Ready', status: 'True' }] };
  await core.replaceNamespacedPodStatus({ namespace: namespace.name, name: 'py-c', body: c });
  await waitFor(
    'py-c to become an endpoint',
    async () => ((await resolver.resolve(namespace.name, 'py')).length === 3 ? true : undefined),
    { timeoutMs: 10_000, intervalMs: 50 },
  );
  await core.deleteNamespacedPod({ namespace: namespace.name, name: 'py-a', gracePeriodSeconds: 0 });
  await waitFor(
    'py-a to leave the endpoints',
    async () => {
      const pods = (await resolver.resolve(namespace.name, 'py')).map((u) => u.pod).sort();
      return pods.join(',') === 'py-b,py-c' ? true : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 50 },
  );
});
