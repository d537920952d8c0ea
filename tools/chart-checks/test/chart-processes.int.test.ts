import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { Cluster, LOOPBACK, REPO_ROOT, freePorts, kubeconfigYaml, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority, issueWorkloadCertificate } from '@kruntimes/workload-pki';
import { ensureHelm, familiesOfExposition, readExportedMetrics, renderChart, singleNamespace } from '../src/index.ts';
import type { KubeObject } from '../src/index.ts';

// The services started the way the chart starts them: each app's src/main.ts (what the
// image's bundle is made of) with the args and the NODE_OPTIONS (heap flags) of its rendered Deployment (the controller-manager also shows
// its RBAC suffices by making a Runtime's objects), as its own ServiceAccount bound to
// exactly the chart's rendered RBAC (applied for real), with global.watchNamespace set to
// the test namespace so that nothing outside it is touched. Container paths and listen
// addresses are the only things rewritten (loopback, temporary files). Then /metrics of each running
// process is scraped and every metric family the list gives that service must be there.
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = KubernetesObjectApi.makeApiClient(admin);
const core = admin.makeApiClient(CoreV1Api);
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };
const SERVICES = ['kruntimes-scheduler', 'kruntimes-stale-recovery', 'kruntimes-controller-manager', 'runtime-gateway'] as const;
type Service = (typeof SERVICES)[number];
const APP: Record<Service, string> = {
  'kruntimes-scheduler': 'scheduler',
  'kruntimes-stale-recovery': 'stale-recovery',
  'kruntimes-controller-manager': 'controller-manager',
  'runtime-gateway': 'runtime-gateway',
};

let namespace: TestNamespace;
let dir = '';
let rendered: KubeObject[] = [];
const applied: KubeObject[] = [];
const children: ChildProcess[] = [];
const metricsUrl = new Map<Service, string>();
/** The base URL of each leader-elected service's --health-address. */
const healthUrl = new Map<Service, string>();
let gatewayPort = 0;
let gatewayCaPem = '';

interface RenderedContainer {
  args?: string[];
  livenessProbe?: { httpGet?: { path: string } };
  readinessProbe?: { httpGet?: { path: string; scheme?: string } };
  env?: { name: string; value?: string }[];
}

function container(name: Service): RenderedContainer {
  const deployment = rendered.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
  const found = (deployment?.spec as { template: { spec: { containers: RenderedContainer[] } } } | undefined)?.template.spec.containers[0];
  if (found === undefined) throw new Error(`no Deployment ${name} rendered`);
  return found;
}

function containerArgs(name: Service): string[] {
  const args = container(name).args;
  if (args === undefined) throw new Error(`no args in Deployment ${name}`);
  return args;
}

async function serviceAccountKubeconfig(name: string): Promise<string> {
  const token =
    (
      await core.createNamespacedServiceAccountToken({
        namespace: namespace.name,
        name,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status?.token ?? '';
  const file = join(dir, `${name}.kubeconfig`);
  await writeFile(file, kubeconfigYaml({ server: cluster.info.server, caPem: cluster.info.caPem, user: name, token }));
  return file;
}

async function start(name: Service, args: string[]): Promise<void> {
  const log = await open(join(dir, `${name}.log`), 'w');
  const nodeOptions = container(name).env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
  if (nodeOptions === undefined) throw new Error(`no NODE_OPTIONS in Deployment ${name}`);
  const child = spawn(process.execPath, [join(REPO_ROOT, 'apps', APP[name], 'src/main.ts'), ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      POD_NAME: `${name}-0`,
      POD_NAMESPACE: namespace.name,
      KRT_LOG_LEVEL: 'debug',
      NODE_OPTIONS: nodeOptions,
    },
    stdio: ['ignore', log.fd, log.fd],
  });
  children.push(child);
  child.once('exit', () => void log.close());
}

async function scrape(url: string): Promise<string | undefined> {
  try {
    const response = await fetch(url);
    return response.status === 200 ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  const helm = await ensureHelm();
  namespace = await cluster.createNamespace({ prefix: 'chart-run', waitForDefaultServiceAccount: true });
  dir = await mkdtemp(join(tmpdir(), 'chart-run-'));
  // Watching the test namespace only: the rendered args carry --namespace, and the RBAC is
  // Roles in it (the default ClusterRoles hold the same rules; chart.test.ts compares them).
  rendered = await renderChart(helm, namespace.name, singleNamespace(namespace.name));
  // The services' own RBAC, for real (cluster-scoped objects are removed in afterAll): with
  // their leader-election Roles and the ClusterRoles of what has no namespace (namespaces,
  // SubjectAccessReviews), which the chart renders whatever it watches.
  const rbacKinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
  const names: readonly string[] = [...SERVICES, 'kruntimes-runtimed'];
  for (const object of rendered.filter(
    (o) => names.includes(o.metadata.name.replace(/-(leader-election|cluster-scoped)$/, '')) && rbacKinds.includes(o.kind),
  )) {
    await objects.patch(object, undefined, undefined, 'chart-checks', true, PatchStrategy.ServerSideApply);
    applied.push(object);
  }
  const ports = await freePorts(8);
  const [schedulerMetrics = 0, recoveryMetrics = 0, gatewayMetrics = 0, gateway = 0, managerMetrics = 0, ...health] = ports;
  gatewayPort = gateway;
  const local = (service: Service, port: number, extra: string[]): string[] =>
    containerArgs(service)
      .map((arg) => (arg.startsWith('--metrics-address=') ? `--metrics-address=${LOOPBACK}:${String(port)}` : arg))
      .map((arg) => {
        if (!arg.startsWith('--health-address=')) return arg;
        const healthPort = health.shift() ?? 0;
        healthUrl.set(service, `http://${LOOPBACK}:${String(healthPort)}`);
        return `--health-address=${LOOPBACK}:${String(healthPort)}`;
      })
      .concat(extra);

  for (const [service, port] of [
    ['kruntimes-scheduler', schedulerMetrics],
    ['kruntimes-stale-recovery', recoveryMetrics],
  ] as const) {
    await start(service, local(service, port, [`--kubeconfig=${await serviceAccountKubeconfig(service)}`]));
    metricsUrl.set(service, `http://${LOOPBACK}:${String(port)}/metrics`);
  }

  // The internal CA (mounted at --internal-ca-dir in the chart) and the gateway's files come from a test CA.
  const ca = await createCertificateAuthority();
  const caDir = await mkdtemp(join(dir, 'internal-ca-'));
  await writeFile(join(caDir, 'ca.crt'), ca.certPem);
  await writeFile(join(caDir, 'ca.key'), ca.keyPem);
  // The gateway's serving certificate below is issued by the same test CA: it is also the gateway CA.
  const gatewayCaFile = join(dir, 'gateway-ca.crt');
  await writeFile(gatewayCaFile, ca.certPem);
  const managerArgs = local('kruntimes-controller-manager', managerMetrics, []).map((arg) =>
    arg.startsWith('--internal-ca-dir=')
      ? `--internal-ca-dir=${caDir}`
      : arg.startsWith('--gateway-ca-file=')
        ? `--gateway-ca-file=${gatewayCaFile}`
        : arg,
  );
  gatewayCaPem = ca.certPem;
  await start('kruntimes-controller-manager', [
    ...managerArgs,
    `--kubeconfig=${await serviceAccountKubeconfig('kruntimes-controller-manager')}`,
  ]);
  metricsUrl.set('kruntimes-controller-manager', `http://${LOOPBACK}:${String(managerMetrics)}/metrics`);

  const serving = await issueWorkloadCertificate(ca, { namespace: namespace.name, runtime: 'gateway' });
  const files: Record<string, string> = {
    '/var/run/kruntimes/gateway-tls/tls.crt': serving.certPem,
    '/var/run/kruntimes/gateway-tls/tls.key': serving.keyPem,
    '/var/run/kruntimes/internal-ca/ca.crt': ca.certPem,
  };
  const gatewayArgs: string[] = [];
  // The chart's default resolve mode watches EndpointSlices: as its ServiceAccount, with exactly the chart's RBAC.
  const gatewayKubeconfig = `--kubeconfig=${await serviceAccountKubeconfig('runtime-gateway')}`;
  for (const arg of local('runtime-gateway', gatewayMetrics, [gatewayKubeconfig])) {
    const [flag = '', value = ''] = arg.split(/=(.*)/s);
    const content = files[value];
    if (content !== undefined) {
      const file = join(dir, value.replaceAll('/', '_'));
      await writeFile(file, content);
      gatewayArgs.push(`${flag}=${file}`);
    } else if (flag === '--listen') gatewayArgs.push(`--listen=${LOOPBACK}:${String(gateway)}`);
    else gatewayArgs.push(arg);
  }
  await start('runtime-gateway', gatewayArgs);
  metricsUrl.set('runtime-gateway', `http://${LOOPBACK}:${String(gatewayMetrics)}/metrics`);
}, 900_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map((child) =>
      child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve)),
    ),
  );
  for (const object of applied.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')) {
    try {
      await objects.delete(object);
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    }
  }
  await namespace.delete();
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

async function logOf(service: Service): Promise<string> {
  return readFile(join(dir, `${service}.log`), 'utf8').catch(() => '');
}

it.each(['kruntimes-scheduler', 'kruntimes-stale-recovery', 'kruntimes-controller-manager'] as const)(
  '%s leads with exactly the chart RBAC (its Lease in the release namespace)',
  async (service) => {
    const leases = admin.makeApiClient(CoordinationV1Api);
    const holder = await waitFor(
      `Lease ${service} held`,
      async () => {
        try {
          return (await leases.readNamespacedLease({ namespace: namespace.name, name: service })).spec?.holderIdentity ?? undefined;
        } catch (error) {
          if (error instanceof ApiException && error.code === 404) return undefined;
          throw error;
        }
      },
      WAIT,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await logOf(service)}`);
    });
    expect(holder).toMatch(new RegExp(`^${service}-0_`));
    // Leading with its informers synced: the rendered probes' paths answer 200 on its health port.
    const { livenessProbe, readinessProbe } = container(service);
    for (const path of [livenessProbe?.httpGet?.path, readinessProbe?.httpGet?.path]) {
      const url = `${healthUrl.get(service) ?? ''}${path ?? ''}`;
      const answer = await waitFor(
        `${url} 200`,
        async () => {
          const response = await fetch(url);
          await response.text();
          return response.status === 200 ? true : undefined;
        },
        WAIT,
      );
      expect({ path, answer }).toEqual({ path: expect.stringMatching(/^\/(healthz|readyz)$/) as string, answer: true });
    }
    // Leading means its informers listed and watch everything they need; a refused call logs an error.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await logOf(service)).split('\n').filter((line) => /"level":(50|60)/.test(line) || line.includes('forbidden'))).toEqual([]);
  },
);

it("the controller-manager makes a Runtime's TLS Secret and Deployment with the chart RBAC", async () => {
  await objects.create({
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Runtime',
    metadata: { name: 'rt', namespace: namespace.name },
    spec: { language: 'python' },
  });
  const exists = async (kind: string, apiVersion: string, name: string): Promise<boolean | undefined> => {
    try {
      await objects.read({ apiVersion, kind, metadata: { name, namespace: namespace.name } });
      return true;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  };
  await waitFor('Secret rt-runtimed-tls', () => exists('Secret', 'v1', 'rt-runtimed-tls'), WAIT);
  await waitFor('Deployment rt', () => exists('Deployment', 'apps/v1', 'rt'), WAIT);
  // Run endpoints point at the chart's gateway and carry its CA: the flags the chart passes reach the Runtime's objects.
  const secret = await core.readNamespacedSecret({ namespace: namespace.name, name: 'rt-runtimed-tls' });
  expect(Buffer.from(secret.data?.['gateway-ca.crt'] ?? '', 'base64').toString('utf8')).toBe(gatewayCaPem);
  const deployment = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: namespace.name, name: 'rt' });
  const env = deployment.spec?.template.spec?.containers.find((c) => c.name === 'runtimed')?.env ?? [];
  expect(env.filter((e) => e.name.startsWith('KRT_GATEWAY')).map((e) => [e.name, e.value])).toEqual([
    ['KRT_GATEWAY_HOST', `runtime-gateway.${namespace.name}.svc`],
    ['KRT_GATEWAY_CA_FILE', '/var/run/kruntimes/tls/gateway-ca.crt'],
  ]);
  expect(
    (await logOf('kruntimes-controller-manager')).split('\n').filter((line) => /"level":(50|60)/.test(line) || line.includes('forbidden')),
  ).toEqual([]);
});

async function allowed(
  serviceAccount: string,
  attributes: { verb: string; group: string; resource: string; namespace?: string },
): Promise<boolean> {
  const review = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
    body: {
      spec: {
        user: `system:serviceaccount:${namespace.name}:${serviceAccount}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace.name}`],
        resourceAttributes: attributes,
      },
    },
  });
  return review.status?.allowed ?? false;
}

it("runtimed's ServiceAccount has RUNTIMED_ROLE_RULES in its Runtime namespace and nothing elsewhere; the gateway only lists and watches EndpointSlices", async () => {
  for (const rule of RUNTIMED_ROLE_RULES) {
    for (const resource of rule.resources) {
      for (const verb of rule.verbs) {
        const [name, subresource] = resource.split('/');
        const attributes = {
          verb,
          group: rule.apiGroups[0] ?? '',
          resource: name ?? '',
          ...(subresource === undefined ? {} : { subresource }),
        };
        expect({ resource, verb, here: await allowed('kruntimes-runtimed', { ...attributes, namespace: namespace.name }) }).toEqual({
          resource,
          verb,
          here: true,
        });
        expect({ resource, verb, elsewhere: await allowed('kruntimes-runtimed', { ...attributes, namespace: 'default' }) }).toEqual({
          resource,
          verb,
          elsewhere: false,
        });
      }
    }
  }
  // runtimed reads the credentials Secret an ArtifactStore names (get), never lists or watches Secrets.
  for (const verb of ['list', 'watch']) {
    expect({
      verb,
      allowed: await allowed('kruntimes-runtimed', { verb, group: '', resource: 'secrets', namespace: namespace.name }),
    }).toEqual({
      verb,
      allowed: false,
    });
  }
  for (const resource of ['secrets', 'pods', 'services', 'runs']) {
    expect({
      resource,
      gateway: await allowed('runtime-gateway', { verb: 'list', group: resource === 'runs' ? 'kruntimes.io' : '', resource }),
    }).toEqual({ resource, gateway: false });
  }
  // Its default endpointslices mode: list and watch of the EndpointSlices where it watches, no get, no write.
  for (const verb of ['list', 'watch', 'get', 'create']) {
    const attributes = { verb, group: 'discovery.k8s.io', resource: 'endpointslices', namespace: namespace.name };
    expect({ verb, gateway: await allowed('runtime-gateway', attributes) }).toEqual({ verb, gateway: verb === 'list' || verb === 'watch' });
  }
});

it('the gateway answers its rendered readiness probe 200 on its HTTPS port (the kubelet verifies no certificate)', async () => {
  const probe = container('runtime-gateway').readinessProbe?.httpGet;
  expect(probe?.scheme).toBe('HTTPS');
  const status = await waitFor(
    `the gateway's ${probe?.path ?? ''} 200`,
    () =>
      new Promise<number | undefined>((resolve) => {
        const req = request(
          { host: LOOPBACK, port: gatewayPort, method: 'GET', path: probe?.path ?? '', rejectUnauthorized: false, agent: false },
          (response) => {
            response.resume();
            resolve(response.statusCode === 200 ? 200 : undefined);
          },
        );
        // Not listening yet: asked again.
        req.once('error', () => {
          resolve(undefined);
        });
        req.end();
      }),
    WAIT,
  );
  expect(status).toBe(200);
});

it('every exported metric family of the scheduler, stale-recovery, the controller-manager and the gateway is on its running /metrics', async () => {
  // One request through the gateway (no token: 401) gives its request counters a data point.
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: LOOPBACK,
        port: gatewayPort,
        method: 'POST',
        path: `/v1/namespaces/${namespace.name}/runtimes/rt/functions/00000000-0000-4000-8000-000000000000:invoke`,
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json' },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    req.once('error', reject);
    req.end('{}');
  });
  expect(status).toBe(401);
  const listed = readExportedMetrics(REPO_ROOT);
  for (const service of SERVICES) {
    const url = metricsUrl.get(service) ?? '';
    const text = await waitFor(`${service} /metrics`, () => scrape(url), WAIT).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await logOf(service)}`);
    });
    const families = familiesOfExposition(text);
    const expected = listed
      .filter((metric) => metric.service === APP[service])
      // Recorded only for a request that reached runtimed; there is none without Runtime Pods.
      .filter((metric) => metric.name !== 'kruntimes_gateway_overhead_seconds')
      .map((metric) => [metric.name, metric.type]);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.filter(([name, type]) => families.get(name ?? '') !== type)).toEqual([]);
  }
  // The controller-manager's series come from its caches: the Runtime made above has its capacity gauges, and
  // a request with credentials is refused.
  const managerUrl = metricsUrl.get('kruntimes-controller-manager') ?? '';
  const capacity = `kruntimes_runtime_capacity_total{namespace="${namespace.name}",runtime="rt"} `;
  const managerText = await waitFor(
    'the Runtime rt in the controller-manager metrics',
    async () => ((await scrape(managerUrl))?.includes(capacity) === true ? true : undefined),
    WAIT,
  );
  expect(managerText).toBe(true);
  const refused = await fetch(managerUrl, { headers: { authorization: 'Bearer x' } });
  expect(refused.status).toBe(400);
  await refused.text();
});
