import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { serviceEndpoints } from '@kruntimes/controller-runtime';
import { Cluster, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { LocalNode } from '../src/index.ts';
import type { LocalNodeEvent } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const config = cluster.kubeConfig();
const core = config.makeApiClient(CoreV1Api);
const apps = config.makeApiClient(AppsV1Api);
const discovery = config.makeApiClient(DiscoveryV1Api);
const fixtures = join(import.meta.dirname, 'fixtures');
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };

let namespace: TestNamespace;
let node: LocalNode;
let stateDir: string;
const events: LocalNodeEvent[] = [];
const startedPids = new Set<number>();

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'local-node', waitForDefaultServiceAccount: true });
  stateDir = await mkdtemp(join(tmpdir(), 'local-node-test-'));
  events.length = 0;
  node = new LocalNode(
    config,
    {
      nodeName: namespace.name,
      stateDir,
      namespaces: [namespace.name],
      images: {
        'kruntimes.test/test-server': { entrypoint: [process.execPath, join(fixtures, 'test-server.ts')] },
        'kruntimes.test/crasher': { entrypoint: [process.execPath, join(fixtures, 'crasher.ts')] },
      },
      crashLoopBackoff: { initialMs: 100, maxMs: 1_600 },
      kubeletServer: cluster.info.kubeletServer,
    },
    { deleteNodeOnStop: true },
  );
  node.events.on('event', (event) => {
    events.push(event);
    if (event.type === 'Started') startedPids.add(event.pid);
  });
  await node.start();
});

afterEach(async () => {
  await node.stop({ graceMs: 2_000 });
  await rm(stateDir, { recursive: true, force: true });
  await namespace.delete();
});

afterAll(() => {
  // No process the agents started survives them.
  expect([...startedPids].filter(alive)).toEqual([]);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function testServer(readiness = true): object {
  return {
    name: 'server',
    image: 'kruntimes.test/test-server:dev',
    env: [
      { name: 'PORT', value: '8080' },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
    ],
    ports: [{ name: 'http', containerPort: 8080 }],
    ...(readiness ? { readinessProbe: { httpGet: { path: '/ready', port: 'http' }, periodSeconds: 1, failureThreshold: 1 } } : {}),
  };
}

function httpCall(method: string, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port: 8080, path, method, timeout: 5_000 }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function readyPods(selector: string, count: number): Promise<V1Pod[]> {
  return waitFor(
    `${count} Ready Pods (${selector})`,
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: namespace.name, labelSelector: selector })).items;
      const ready = pods.filter(
        (p) => p.metadata?.deletionTimestamp === undefined && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready.length === count ? ready : undefined;
    },
    WAIT,
  );
}

test('a Deployment of 2 replicas: distinct 127.0.0.x, same port, Ready; deletion is graceful and replaced; readiness failure makes it NotReady', async () => {
  const labels = { app: 'echo' };
  await apps.createNamespacedDeployment({
    namespace: namespace.name,
    body: {
      metadata: { name: 'echo' },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { terminationGracePeriodSeconds: 10, containers: [testServer() as never] } },
      },
    },
  });
  await core.createNamespacedService({
    namespace: namespace.name,
    body: { metadata: { name: 'echo' }, spec: { selector: labels, ports: [{ port: 80, targetPort: 'http' }] } },
  });

  const pods = await readyPods('app=echo', 2);
  const ips = pods.map((p) => p.status?.podIP ?? '');
  expect(new Set(ips).size).toBe(2);
  for (const ip of ips) expect(ip).toMatch(/^127\.0\.0\.(\d+)$/);
  for (const pod of pods) {
    const answer = JSON.parse((await httpCall('GET', pod.status?.podIP ?? '', '/')).body) as { pod: string; uid: string };
    expect(answer).toMatchObject({ pod: pod.metadata?.name, uid: pod.metadata?.uid });
  }
  // Service endpoints. kube-apiserver refuses loopback addresses in EndpointSlices, so
  // kube-controller-manager can never list 127.0.0.x Pods there (shown here); the platform
  // derives the same ready endpoints from the Service and its Pods instead.
  await expect(
    discovery.createNamespacedEndpointSlice({
      namespace: namespace.name,
      body: { metadata: { name: 'loopback' }, addressType: 'IPv4', endpoints: [{ addresses: [ips[0] ?? ''] }], ports: [{ port: 8080 }] },
    }),
  ).rejects.toMatchObject({ code: 422, body: expect.stringContaining('may not be in the loopback range') as unknown });
  const endpointIps = async (): Promise<string[]> => {
    const service = await core.readNamespacedService({ namespace: namespace.name, name: 'echo' });
    const current = (await core.listNamespacedPod({ namespace: namespace.name })).items;
    return serviceEndpoints(service, current)
      .map((endpoint) => `${endpoint.ip}:${String(endpoint.ports[''])}`)
      .sort();
  };
  expect(await endpointIps()).toEqual(ips.map((ip) => `${ip}:8080`).sort());

  // Graceful deletion: the process sees SIGTERM; the ReplicaSet's replacement is a new Pod on a new address.
  const [victim, survivor] = pods as [V1Pod, V1Pod];
  const victimLog = node.logFile(namespace.name, victim.metadata?.name ?? '', 'server');
  await core.deleteNamespacedPod({ namespace: namespace.name, name: victim.metadata?.name ?? '' });
  await waitFor(
    'the deleted Pod to be gone',
    async () =>
      (await core.listNamespacedPod({ namespace: namespace.name })).items.some((p) => p.metadata?.uid === victim.metadata?.uid)
        ? undefined
        : true,
    WAIT,
  );
  expect(await readFile(victimLog, 'utf8')).toContain('received SIGTERM');
  const after = await readyPods('app=echo', 2);
  const replacement = after.find((p) => p.metadata?.uid !== survivor.metadata?.uid);
  expect(replacement?.metadata?.uid).not.toBe(victim.metadata?.uid);
  expect(replacement?.status?.podIP).not.toBe(victim.status?.podIP);
  expect(replacement?.status?.podIP).not.toBe(survivor.status?.podIP);

  // A failing readiness probe takes the Pod out of the ready endpoints.
  const survivorIP = survivor.status?.podIP ?? '';
  await httpCall('POST', survivorIP, '/unready');
  await waitFor(
    'the Pod whose readiness probe fails to be NotReady',
    async () => {
      const current = await core.readNamespacedPod({ namespace: namespace.name, name: survivor.metadata?.name ?? '' });
      return current.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'False' ? true : undefined;
    },
    WAIT,
  );
  expect(await endpointIps()).not.toContain(`${survivorIP}:8080`);
  expect(await endpointIps()).toHaveLength(1);
});

test('a crashing container restarts with growing back-off and a rising restartCount', async () => {
  await core.createNamespacedPod({
    namespace: namespace.name,
    body: { metadata: { name: 'crasher' }, spec: { containers: [{ name: 'main', image: 'kruntimes.test/crasher' }] } },
  });
  const pod = await waitFor(
    'restartCount >= 4',
    async () => {
      const current = await core.readNamespacedPod({ namespace: namespace.name, name: 'crasher' });
      return (current.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 4 ? current : undefined;
    },
    WAIT,
  );
  const status = pod.status?.containerStatuses?.[0];
  expect(status?.lastState?.terminated?.exitCode).toBe(3);
  const delays = events.flatMap((e) => (e.type === 'BackOff' ? [e.delayMs] : []));
  expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
});
