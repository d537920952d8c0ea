import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoordinationV1Api, CoreV1Api, KubernetesObjectApi, PatchStrategy, V1MicroTime } from '@kubernetes/client-node';
import { Cluster, LOOPBACK, REPO_ROOT, freePorts, kubeconfigYaml, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import { ensureHelm, renderChart, singleNamespace } from '../src/index.ts';
import type { KubeObject } from '../src/index.ts';

// The kubelet's view of the leader-elected services, started as the chart starts them
// (each app's src/main.ts with its rendered args, as its own ServiceAccount): the rendered
// probes' paths on the port of their --health-address, through a standby term (another
// holder's Lease), a leading term whose informers cannot list (their RBAC withheld), and
// that term once the RBAC is applied and the informers sync.
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = KubernetesObjectApi.makeApiClient(admin);
const core = admin.makeApiClient(CoreV1Api);
const leases = admin.makeApiClient(CoordinationV1Api);
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };
const SERVICES = ['kruntimes-scheduler', 'kruntimes-stale-recovery', 'kruntimes-controller-manager'] as const;
type Service = (typeof SERVICES)[number];
const APP: Record<Service, string> = {
  'kruntimes-scheduler': 'scheduler',
  'kruntimes-stale-recovery': 'stale-recovery',
  'kruntimes-controller-manager': 'controller-manager',
};
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

interface RenderedContainer {
  args: string[];
  env: { name: string; value?: string }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
}

let namespace: TestNamespace;
let dir = '';
let rendered: KubeObject[] = [];
const appliedClusterScoped: KubeObject[] = [];
const children: ChildProcess[] = [];
const healthBase = new Map<Service, string>();

function container(name: Service): RenderedContainer {
  const deployment = rendered.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
  const found = (deployment?.spec as { template: { spec: { containers: RenderedContainer[] } } } | undefined)?.template.spec.containers[0];
  if (found === undefined) throw new Error(`no Deployment ${name} rendered`);
  return found;
}

/**
 * The RBAC objects of a service. `lease`: all but its informers' rights, i.e. its Role
 * holding only the rules on Leases (stale-recovery reads its Lease through that Role);
 * `all`: everything as rendered (the Role applied again, whole).
 */
function rbacOf(service: Service, part: 'lease' | 'all'): KubeObject[] {
  return rendered
    .filter((o) => RBAC_KINDS.includes(o.kind) && o.metadata.name.replace(/-(leader-election|cluster-scoped)$/, '') === service)
    .map((o) => {
      if (part === 'all' || o.kind !== 'Role' || o.metadata.name !== service) return o;
      const rules = (o.rules as { apiGroups: string[] }[]).filter((rule) => rule.apiGroups.includes('coordination.k8s.io'));
      return { ...o, rules };
    });
}

async function apply(list: KubeObject[]): Promise<void> {
  for (const object of list) {
    await objects.patch(object, undefined, undefined, 'chart-checks', true, PatchStrategy.ServerSideApply);
    if (object.kind.startsWith('Cluster')) appliedClusterScoped.push(object);
  }
}

async function serviceAccountKubeconfig(name: string): Promise<string> {
  const body = { spec: { audiences: [], expirationSeconds: 3600 } };
  const token = (await core.createNamespacedServiceAccountToken({ namespace: namespace.name, name, body })).status?.token ?? '';
  const file = join(dir, `${name}.kubeconfig`);
  await writeFile(file, kubeconfigYaml({ server: cluster.info.server, caPem: cluster.info.caPem, user: name, token }));
  return file;
}

/** The rendered args, with listen addresses on loopback and mounted files in the test's directory. */
async function localArgs(service: Service, healthPort: number): Promise<string[]> {
  const { args, ports } = container(service);
  const renderedHealth = ports.find((port) => port.name === container(service).readinessProbe.httpGet.port)?.containerPort;
  expect(args).toContain(`--health-address=:${String(renderedHealth)}`);
  const ca = await createCertificateAuthority();
  const caDir = join(dir, 'internal-ca');
  await mkdir(caDir, { recursive: true });
  await writeFile(join(caDir, 'ca.crt'), ca.certPem);
  await writeFile(join(caDir, 'ca.key'), ca.keyPem);
  await writeFile(join(dir, 'gateway-ca.crt'), ca.certPem);
  return [
    ...args
      .filter((arg) => !arg.startsWith('--metrics-address='))
      .map((arg) => {
        const [flag = ''] = arg.split('=');
        if (flag === '--health-address') return `--health-address=${LOOPBACK}:${String(healthPort)}`;
        if (flag === '--internal-ca-dir') return `--internal-ca-dir=${caDir}`;
        if (flag === '--gateway-ca-file') return `--gateway-ca-file=${join(dir, 'gateway-ca.crt')}`;
        return arg;
      }),
    `--kubeconfig=${await serviceAccountKubeconfig(service)}`,
  ];
}

async function start(service: Service, args: string[]): Promise<void> {
  const log = await open(join(dir, `${service}.log`), 'w');
  const nodeOptions = container(service).env.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
  const child = spawn(process.execPath, [join(REPO_ROOT, 'apps', APP[service], 'src/main.ts'), ...args], {
    env: { PATH: process.env.PATH ?? '', POD_NAME: `${service}-0`, POD_NAMESPACE: namespace.name, NODE_OPTIONS: nodeOptions },
    stdio: ['ignore', log.fd, log.fd],
  });
  children.push(child);
  child.once('exit', () => void log.close());
}

/** Another replica's Lease, renewed just now and valid for an hour: the service stays a standby. */
async function holdLease(service: Service): Promise<void> {
  const now = new V1MicroTime();
  const spec = { holderIdentity: 'another-replica', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now };
  await leases.createNamespacedLease({ namespace: namespace.name, body: { metadata: { name: service }, spec } });
}

async function leaseHolder(service: Service): Promise<string | undefined> {
  try {
    return (await leases.readNamespacedLease({ namespace: namespace.name, name: service })).spec?.holderIdentity ?? undefined;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

async function logOf(service: Service): Promise<string> {
  return readFile(join(dir, `${service}.log`), 'utf8').catch(() => '');
}

/** GET of a rendered probe's path: [status, body]. */
async function probe(service: Service, kind: 'livenessProbe' | 'readinessProbe'): Promise<[number, string]> {
  const response = await fetch(`${healthBase.get(service) ?? ''}${container(service)[kind].httpGet.path}`);
  return [response.status, (await response.text()).trim()];
}

/** Waits until both probes answer as expected; on a timeout the service's log says why. */
async function probesAnswer(service: Service, liveness: [number, string], readiness: [number, string]): Promise<void> {
  const expected = JSON.stringify([liveness, readiness]);
  let last = '';
  await waitFor(
    `${service} probes ${expected}`,
    async () => {
      last = JSON.stringify([await probe(service, 'livenessProbe'), await probe(service, 'readinessProbe')]);
      return last === expected ? true : undefined;
    },
    WAIT,
  ).catch(async (error: unknown) => {
    throw new Error(`${String(error)}; last ${last}\n${await logOf(service)}`);
  });
}

beforeAll(async () => {
  const helm = await ensureHelm();
  namespace = await cluster.createNamespace({ prefix: 'probes', waitForDefaultServiceAccount: true });
  dir = await mkdtemp(join(tmpdir(), 'service-probes-'));
  rendered = await renderChart(helm, namespace.name, singleNamespace(namespace.name));
}, 300_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map((child) =>
      child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve)),
    ),
  );
  for (const object of appliedClusterScoped) {
    try {
      await objects.delete(object);
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    }
  }
  await namespace.delete();
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

it('a standby is live and ready; a leader is live and not ready until its informers synced, then ready', async () => {
  const ports = await freePorts(SERVICES.length);
  for (const [index, service] of SERVICES.entries()) {
    // Its ServiceAccount and Lease rights, not yet those its informers list and watch with.
    await apply(rbacOf(service, 'lease'));
    await holdLease(service);
    healthBase.set(service, `http://${LOOPBACK}:${String(ports[index] ?? 0)}`);
    await start(service, await localArgs(service, ports[index] ?? 0));
  }
  for (const service of SERVICES) await probesAnswer(service, [200, 'ok'], [200, 'standby: another replica leads']);
  for (const service of SERVICES) expect(await leaseHolder(service)).toBe('another-replica');

  // The other replica is gone: each takes its Lease, and its informers are refused their lists.
  for (const service of SERVICES) await leases.deleteNamespacedLease({ namespace: namespace.name, name: service });
  for (const service of SERVICES) {
    await waitFor(
      `${service} leads`,
      async () => ((await leaseHolder(service))?.startsWith(`${service}-0_`) ? true : undefined),
      WAIT,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await logOf(service)}`);
    });
    await probesAnswer(service, [200, 'ok'], [503, 'leading: informers not synced or controllers not started']);
  }
  // Stays so while its lists are refused (liveness too: restarting it would not help).
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  for (const service of SERVICES) {
    expect([await probe(service, 'livenessProbe'), await probe(service, 'readinessProbe')]).toEqual([
      [200, 'ok'],
      [503, 'leading: informers not synced or controllers not started'],
    ]);
  }

  for (const service of SERVICES) await apply(rbacOf(service, 'all'));
  for (const service of SERVICES) await probesAnswer(service, [200, 'ok'], [200, 'informers synced; running']);
});
