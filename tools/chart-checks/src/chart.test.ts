import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNTIME_USER_RULES } from '@kruntimes/api';
import { admissionObjects } from '@kruntimes/crds';
import { GATEWAY_ENDPOINTSLICE_RBAC_RULES, GATEWAY_RBAC_RULES, READINESS_PATH } from '@kruntimes/gateway-core';
import { memoryQuantityBytes, nodeHeapOptions } from '@kruntimes/runtime-workload';
import { RELEASE, VARIANTS, renderChart, singleNamespace } from './chart.ts';
import type { KubeObject } from './chart.ts';
import { DASHBOARDS } from './dashboards.ts';
import { serviceRules, splitRules } from './rbac-rules.ts';
import type { PolicyRule, RuleSetName } from './rbac-rules.ts';
import { VALUES_SCHEMA_FILE, renderValuesSchema } from './values-schema.ts';
import { CHART_DIR, WORKSPACE_ROOT, ensureHelm, runHelm } from './workspace.ts';

const NAMESPACE = 'kruntimes-system';
const RUNTIME_NAMESPACES = ['team-a', 'team-b'];
const COMMON = [
  `runtimes.namespaces={${RUNTIME_NAMESPACES.join(',')}}`,
  'global.serviceMonitor.enabled=true',
  'global.networkPolicy.metricsNamespaces={monitoring}',
  'gateway.networkPolicy.allowedNamespaces={agents}',
];

let helm = '';
beforeAll(async () => {
  helm = await ensureHelm();
});

interface Probe {
  httpGet?: { path: string; port: string; scheme?: string };
  tcpSocket?: { port: string };
}
interface Container {
  name: string;
  image: string;
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
  resources?: { limits?: { memory?: string } };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: {
    name: string;
    secret?: { secretName: string; items?: { key: string; path: string }[] };
    projected?: { sources: { secret?: { name: string; items?: { key: string; path: string }[] } }[] };
  }[];
}

interface RuntimePodPolicy {
  policyTypes: string[];
  egress?: {
    to?: { ipBlock?: { cidr: string; except?: string[] }; podSelector?: unknown }[];
    ports?: { port: number; protocol: string }[];
  }[];
}

function podSpec(deployment: KubeObject): PodSpec {
  return (deployment.spec as { template: { spec: PodSpec } }).template.spec;
}
function find(objects: KubeObject[], kind: string, name: string, namespace?: string): KubeObject | undefined {
  return objects.find(
    (o) => o.kind === kind && o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace),
  );
}
function get(objects: KubeObject[], kind: string, name: string, namespace?: string): KubeObject {
  const object = find(objects, kind, name, namespace);
  if (object === undefined) throw new Error(`no ${kind} ${name} rendered`);
  return object;
}
function rulesOf(object: KubeObject): PolicyRule[] {
  return (object.rules as PolicyRule[] | undefined) ?? [];
}

/** Which app each Deployment's container runs (the Dockerfile and main.ts of apps/<app>). */
const APP_OF_DEPLOYMENT: Record<string, string> = {
  'kruntimes-scheduler': 'scheduler',
  'kruntimes-stale-recovery': 'stale-recovery',
  'kruntimes-controller-manager': 'controller-manager',
  'runtime-gateway': 'runtime-gateway',
};

/** The apps built on controller-runtime's serviceProcess, whose shared flags SERVICE_FLAGS declares. */
const LEADER_ELECTED_APPS = new Set(['scheduler', 'stale-recovery', 'controller-manager']);
const SERVICE_FLAGS = join(WORKSPACE_ROOT, 'libs/controller-runtime/src/service-flags.ts');

describe('helm lint', () => {
  it.each(Object.entries(VARIANTS))('passes with %s values', async (_name, set) => {
    const result = await runHelm(helm, [
      'lint',
      CHART_DIR,
      '--strict',
      '--namespace',
      NAMESPACE,
      ...[...COMMON, ...set].flatMap((value) => ['--set', value]),
    ]);
    expect(result.stderr + result.stdout).toContain('0 chart(s) failed');
    expect(result.code).toBe(0);
  });
});

describe.each(Object.entries(VARIANTS))('helm template with %s values', (variant, set) => {
  let objects: KubeObject[] = [];
  beforeAll(async () => {
    objects = await renderChart(helm, NAMESPACE, [...COMMON, ...set]);
  });
  const gatewayEnabled = variant !== 'gateway disabled';
  const deployments = (): KubeObject[] => objects.filter((o) => o.kind === 'Deployment');

  it('renders one Deployment per service, the gateway only when enabled', () => {
    const expected = [
      'kruntimes-controller-manager',
      'kruntimes-scheduler',
      'kruntimes-stale-recovery',
      ...(gatewayEnabled ? ['runtime-gateway'] : []),
    ];
    expect(
      deployments()
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(expected);
    expect(find(objects, 'Service', 'runtime-gateway') !== undefined).toBe(gatewayEnabled);
    for (const d of deployments()) expect(d.metadata.namespace).toBe(NAMESPACE);
  });

  it('runs every container non-root, read-only, without privilege escalation or capabilities, seccomp RuntimeDefault', () => {
    for (const deployment of deployments()) {
      const spec = podSpec(deployment);
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      for (const container of spec.containers) {
        expect(container.securityContext).toMatchObject({
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        });
      }
    }
  });

  it('passes each app only flags its main.ts or its core lib config declares', () => {
    for (const deployment of deployments()) {
      const app = APP_OF_DEPLOYMENT[deployment.metadata.name];
      expect(app).toBeDefined();
      // The flags are parsed in the app's main or in its core lib's config (gateway-core for runtime-gateway);
      // the leader-elected services' shared ones in controller-runtime's SERVICE_OPTIONS.
      const coreConfig = join(WORKSPACE_ROOT, 'libs', `${(app ?? '').replace(/^runtime-/, '')}-core`, 'src/config.ts');
      const sharedFlags = LEADER_ELECTED_APPS.has(app ?? '') ? [SERVICE_FLAGS] : [];
      const main = [join(WORKSPACE_ROOT, 'apps', app ?? '', 'src/main.ts'), coreConfig, ...sharedFlags]
        .filter((file) => existsSync(file))
        .map((file) => readFileSync(file, 'utf8'))
        .join('\n');
      for (const arg of podSpec(deployment).containers[0]?.args ?? []) {
        const flag = /^--([a-z0-9-]+)=/.exec(arg)?.[1];
        expect(flag).toBeDefined();
        expect({ app, flag, declared: new RegExp(`^\\s+'?${flag ?? ''}'?: \\{ type: 'string'`, 'm').test(main) }).toEqual({
          app,
          flag,
          declared: true,
        });
      }
    }
  });

  it("sizes each service's V8 heap from its memory limit as runtimed's is sized (nodeHeapOptions)", () => {
    for (const deployment of deployments()) {
      const [container] = podSpec(deployment).containers;
      const limit = memoryQuantityBytes(container?.resources?.limits?.memory ?? '');
      expect(limit).toBeDefined();
      const nodeOptions = container?.env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
      expect({ deployment: deployment.metadata.name, nodeOptions }).toEqual({
        deployment: deployment.metadata.name,
        nodeOptions: nodeHeapOptions(limit ?? 0),
      });
    }
  });

  it("gives the controller-manager runtimed's default requests and limit", () => {
    const args = podSpec(get(objects, 'Deployment', 'kruntimes-controller-manager')).containers[0]?.args ?? [];
    expect(args.filter((arg) => arg.startsWith('--runtimed-'))).toEqual([
      '--runtimed-image=kruntimes/runtimed:' +
        String(
          args
            .find((arg) => arg.startsWith('--runtimed-image='))
            ?.split(':')
            .at(-1),
        ),
      '--runtimed-cpu-request=50m',
      '--runtimed-memory-request=112Mi',
      '--runtimed-memory-limit=192Mi',
    ]);
  });

  it('mounts the internal CA key only into the controller-manager, and only ca.crt into the gateway', () => {
    const certManager = variant === 'cert-manager';
    const caSecret = variant === 'existing Secrets' ? 'my-internal-ca' : 'kruntimes-internal-ca';
    const secretVolumes = deployments().flatMap((d) =>
      (podSpec(d).volumes ?? []).flatMap((v) => [
        ...(v.secret === undefined ? [] : [{ deployment: d.metadata.name, name: v.secret.secretName, items: v.secret.items }]),
        ...(v.projected?.sources.flatMap((s) =>
          s.secret === undefined ? [] : [{ deployment: d.metadata.name, name: s.secret.name, items: s.secret.items }],
        ) ?? []),
      ]),
    );
    const ca = secretVolumes.filter((v) => v.name === caSecret);
    expect(ca.map((v) => v.deployment).sort()).toEqual(['kruntimes-controller-manager', ...(gatewayEnabled ? ['runtime-gateway'] : [])]);
    expect(ca.find((v) => v.deployment === 'kruntimes-controller-manager')?.items).toEqual(
      certManager
        ? [
            { key: 'tls.crt', path: 'ca.crt' },
            { key: 'tls.key', path: 'ca.key' },
          ]
        : [
            { key: 'ca.crt', path: 'ca.crt' },
            { key: 'ca.key', path: 'ca.key' },
          ],
    );
    if (gatewayEnabled) {
      expect(ca.find((v) => v.deployment === 'runtime-gateway')?.items).toEqual([{ key: 'ca.crt', path: 'ca.crt' }]);
      const tls = secretVolumes.find((v) => v.deployment === 'runtime-gateway' && v.name !== caSecret);
      expect(tls?.name).toBe(variant === 'existing Secrets' ? 'my-gateway-tls' : 'runtime-gateway-tls');
    }
  });

  it('points Run endpoints at the gateway: the controller-manager gets its host and only the ca.crt of its TLS Secret, when there is one', () => {
    const spec = podSpec(get(objects, 'Deployment', 'kruntimes-controller-manager'));
    const container = spec.containers[0];
    const gatewayArgs = (container?.args ?? []).filter((arg) => arg.startsWith('--gateway-'));
    const volume = spec.volumes?.find((v) => v.name === 'gateway-ca');
    if (!gatewayEnabled) {
      expect(gatewayArgs).toEqual([]);
      expect(volume).toBeUndefined();
      return;
    }
    expect(gatewayArgs).toEqual([
      `--gateway-host=runtime-gateway.${NAMESPACE}.svc`,
      '--gateway-ca-file=/var/run/kruntimes/gateway-ca/ca.crt',
    ]);
    // Never the key: one item only.
    expect(volume?.secret).toMatchObject({
      secretName: variant === 'existing Secrets' ? 'my-gateway-tls' : 'runtime-gateway-tls',
      items: [{ key: 'ca.crt', path: 'ca.crt' }],
    });
    expect(container?.volumeMounts).toContainEqual({ name: 'gateway-ca', mountPath: '/var/run/kruntimes/gateway-ca', readOnly: true });
  });

  it('creates cert-manager objects only when asked to', () => {
    const certificates = objects
      .filter((o) => o.kind === 'Certificate')
      .map((o) => o.metadata.name)
      .sort();
    expect(certificates).toEqual(variant === 'cert-manager' ? ['kruntimes-internal-ca', 'runtime-gateway-ca', 'runtime-gateway-tls'] : []);
    if (variant === 'cert-manager') {
      expect(get(objects, 'Certificate', 'kruntimes-internal-ca').spec).toMatchObject({
        isCA: true,
        secretName: 'kruntimes-internal-ca',
        privateKey: { algorithm: 'ECDSA', size: 256 },
      });
      expect((get(objects, 'Certificate', 'runtime-gateway-tls').spec as { dnsNames: string[] }).dnsNames).toContain(
        `runtime-gateway.${NAMESPACE}.svc`,
      );
    }
  });

  it('grants each service exactly the rules of its constant: cluster-wide, and its leader Lease in the release namespace', () => {
    const rules = serviceRules();
    const services: [RuleSetName, string][] = [
      ['scheduler', 'kruntimes-scheduler'],
      ['controllerManager', 'kruntimes-controller-manager'],
      ['staleRecovery', 'kruntimes-stale-recovery'],
    ];
    for (const [set, name] of services) {
      const { cluster, namespaced, clusterScoped } = splitRules(set, rules[set]);
      expect(rulesOf(get(objects, 'ClusterRole', name))).toEqual(cluster);
      if (clusterScoped.length > 0) {
        expect(rulesOf(get(objects, 'ClusterRole', `${name}-cluster-scoped`))).toEqual(clusterScoped);
        expect(get(objects, 'ClusterRoleBinding', `${name}-cluster-scoped`).subjects).toEqual([
          { kind: 'ServiceAccount', name, namespace: NAMESPACE },
        ]);
      }
      expect(rulesOf(get(objects, 'Role', `${name}-leader-election`, NAMESPACE))).toEqual(namespaced);
      expect(namespaced.length).toBeGreaterThan(0);
      expect(get(objects, 'ClusterRoleBinding', name).subjects).toEqual([{ kind: 'ServiceAccount', name, namespace: NAMESPACE }]);
      expect(get(objects, 'RoleBinding', `${name}-leader-election`, NAMESPACE).roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: `${name}-leader-election`,
      });
    }
    expect(rulesOf(get(objects, 'ClusterRole', 'kruntimes-runtimed'))).toEqual(rules.runtimed);
  });

  it('gives the gateway, in its default endpointslices mode, list and watch of EndpointSlices and nothing else, and nothing on Secrets ever', () => {
    const gatewayRbac = objects.filter(
      (o) => o.metadata.name === 'runtime-gateway' && ['ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'].includes(o.kind),
    );
    if (gatewayEnabled) {
      expect(gatewayRbac.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding']);
      expect(rulesOf(get(objects, 'ClusterRole', 'runtime-gateway'))).toEqual([...GATEWAY_ENDPOINTSLICE_RBAC_RULES]);
      expect(get(objects, 'ClusterRoleBinding', 'runtime-gateway').subjects).toEqual([
        { kind: 'ServiceAccount', name: 'runtime-gateway', namespace: NAMESPACE },
      ]);
      expect(podSpec(get(objects, 'Deployment', 'runtime-gateway')).containers[0]?.args).toContain('--resolve=endpointslices');
    } else {
      expect(gatewayRbac).toEqual([]);
    }
    for (const rules of [GATEWAY_RBAC_RULES, GATEWAY_ENDPOINTSLICE_RBAC_RULES]) {
      expect(rules.flatMap((rule) => rule.resources)).not.toContain('secrets');
      expect(rules.flatMap((rule) => rule.verbs).every((verb) => verb === 'list' || verb === 'watch')).toBe(true);
    }
  });

  it("installs runtimed's ServiceAccount, RoleBinding and NetworkPolicy in every Runtime namespace", () => {
    for (const namespace of RUNTIME_NAMESPACES) {
      expect(get(objects, 'ServiceAccount', 'kruntimes-runtimed', namespace).automountServiceAccountToken).toBe(false);
      expect(get(objects, 'RoleBinding', 'kruntimes-runtimed', namespace)).toMatchObject({
        roleRef: { kind: 'ClusterRole', name: 'kruntimes-runtimed' },
        subjects: [{ kind: 'ServiceAccount', name: 'kruntimes-runtimed', namespace }],
      });
      const policy = get(objects, 'NetworkPolicy', 'kruntimes-runtimed', namespace).spec as {
        ingress: { from: unknown[]; ports: { port: number }[] }[];
      };
      const ports = policy.ingress
        .map((rule) => rule.ports.map((p) => p.port))
        .flat()
        .sort();
      // grpc only from the gateway (when there is one), peer only from Runtime Pods, metrics from Prometheus.
      expect(ports).toEqual(gatewayEnabled ? [7443, 7444, 9464] : [7444, 9464]);
      // prometheus-operator keeps only the Pods' declared ports: the Runtime Pod template's runtimed declares `metrics`.
      const podMonitor = get(objects, 'PodMonitor', 'kruntimes-runtimed', namespace).spec as { podMetricsEndpoints: { port?: string }[] };
      expect(podMonitor.podMetricsEndpoints.map((endpoint) => endpoint.port)).toEqual(['metrics']);
    }
    expect(objects.filter((o) => o.kind === 'RoleBinding' && o.metadata.name === 'kruntimes-runtimed')).toHaveLength(
      RUNTIME_NAMESPACES.length,
    );
  });

  it("limits Runtime Pods' egress: DNS, the API server, peers and the internet, never the metadata address or the cluster's ranges", () => {
    for (const namespace of RUNTIME_NAMESPACES) {
      const policy = get(objects, 'NetworkPolicy', 'kruntimes-runtimed', namespace).spec as RuntimePodPolicy;
      expect(policy.policyTypes).toEqual(['Ingress', 'Egress']);
      const egress = policy.egress ?? [];
      const ports = egress.map((rule) => (rule.ports ?? []).map((p) => `${String(p.port)}/${p.protocol}`));
      // DNS and the API server's port at any address (no DNS peers given; helm template cannot look up the API server), peers.
      expect(ports.slice(0, 3)).toEqual([['53/UDP', '53/TCP'], ['6443/TCP'], ['7444/TCP']]);
      expect(egress.slice(0, 2).map((rule) => rule.to)).toEqual([undefined, undefined]);
      const internet = egress.at(-1)?.to ?? [];
      expect(internet.map((peer) => peer.ipBlock?.cidr)).toEqual(['0.0.0.0/0', '::/0']);
      const denied = internet.flatMap((peer) => peer.ipBlock?.except ?? []);
      expect(denied).toEqual(expect.arrayContaining(['169.254.169.254/32', 'fd00:ec2::254/128', '10.0.0.0/8', 'fc00::/7']));
    }
  });

  it('takes the API server addresses, extra egress rules and cluster ranges from values, and turns egress off on request', async () => {
    const custom = await renderChart(helm, NAMESPACE, [
      ...COMMON,
      ...set,
      'runtimes.egress.apiServer.cidrs={192.0.2.10/32}',
      'runtimes.egress.allowTo[0].to[0].ipBlock.cidr=198.51.100.0/24',
      'runtimes.egress.allowTo[0].ports[0].port=8333',
      'runtimes.egress.internet.clusterCIDRsIPv4={10.244.0.0/16}',
      'runtimes.egress.dns[0].podSelector.matchLabels.k8s-app=kube-dns',
    ]);
    const policy = get(custom, 'NetworkPolicy', 'kruntimes-runtimed', 'team-a').spec as RuntimePodPolicy;
    const cidrs = (policy.egress ?? []).flatMap((rule) => (rule.to ?? []).map((peer) => peer.ipBlock?.cidr));
    expect(cidrs).toEqual(expect.arrayContaining(['192.0.2.10/32', '198.51.100.0/24']));
    expect(policy.egress?.[0]?.to).toEqual([{ podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }]);
    expect(policy.egress?.at(-1)?.to?.[0]?.ipBlock?.except).toEqual(['169.254.169.254/32', '169.254.170.2/32', '10.244.0.0/16']);
    const open = await renderChart(helm, NAMESPACE, [...COMMON, ...set, 'runtimes.egress.enabled=false']);
    const ingressOnly = get(open, 'NetworkPolicy', 'kruntimes-runtimed', 'team-a').spec as RuntimePodPolicy;
    expect(ingressOnly.policyTypes).toEqual(['Ingress']);
    expect(ingressOnly.egress).toBeUndefined();
  });

  it('probes the leader-elected services: /healthz for liveness, /readyz for readiness, on the health port their --health-address serves', () => {
    for (const name of ['kruntimes-scheduler', 'kruntimes-stale-recovery', 'kruntimes-controller-manager']) {
      const [container] = podSpec(get(objects, 'Deployment', name, NAMESPACE)).containers;
      expect({ name, args: container?.args?.filter((arg) => arg.startsWith('--health-address')) }).toEqual({
        name,
        args: ['--health-address=:8081'],
      });
      expect(container?.ports).toContainEqual({ name: 'health', containerPort: 8081, protocol: 'TCP' });
      expect(container?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'health' });
      expect(container?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'health' });
    }
  });

  it('probes the gateway for readiness on its HTTPS /readyz (503 from SIGTERM on); its grace period covers the shutdown delay and the drain', async () => {
    if (!gatewayEnabled) return;
    const spec = podSpec(get(objects, 'Deployment', 'runtime-gateway', NAMESPACE));
    const [container] = spec.containers;
    expect(container?.readinessProbe?.httpGet).toEqual({ path: READINESS_PATH, port: 'https', scheme: 'HTTPS' });
    expect(container?.livenessProbe?.tcpSocket).toEqual({ port: 'https' });
    expect(container?.args).toEqual(expect.arrayContaining(['--shutdown-delay-seconds=5', '--drain-seconds=30']));
    expect(spec.terminationGracePeriodSeconds).toBe(5 + 30 + 10);
    const changed = await renderChart(helm, NAMESPACE, [...COMMON, ...set, 'gateway.shutdownDelaySeconds=0', 'gateway.drainSeconds=7']);
    const changedSpec = podSpec(get(changed, 'Deployment', 'runtime-gateway', NAMESPACE));
    expect(changedSpec.containers[0]?.args).toEqual(expect.arrayContaining(['--shutdown-delay-seconds=0', '--drain-seconds=7']));
    expect(changedSpec.terminationGracePeriodSeconds).toBe(7 + 10);
  });

  it('opens the health port of those services to global.health.probeFrom only', async () => {
    const rendered = await renderChart(helm, NAMESPACE, [...COMMON, ...set, 'global.health.probeFrom[0].ipBlock.cidr=10.0.0.0/8']);
    for (const name of ['kruntimes-scheduler', 'kruntimes-stale-recovery', 'kruntimes-controller-manager']) {
      const ingress = (spec: unknown): unknown[] => (spec as { ingress: unknown[] }).ingress;
      const health = { from: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ port: 'health', protocol: 'TCP' }] };
      expect(ingress(get(rendered, 'NetworkPolicy', name, NAMESPACE).spec)).toContainEqual(health);
      expect(ingress(get(objects, 'NetworkPolicy', name, NAMESPACE).spec)).not.toContainEqual(health);
    }
  });

  it('opens the gateway only to the namespaces the values name; no gateway policy without a gateway', () => {
    if (!gatewayEnabled) {
      expect(find(objects, 'NetworkPolicy', 'runtime-gateway', NAMESPACE)).toBeUndefined();
      return;
    }
    const spec = get(objects, 'NetworkPolicy', 'runtime-gateway', NAMESPACE).spec as {
      ingress: { from: { namespaceSelector: { matchExpressions: { values: string[] }[] } }[]; ports: { port: string }[] }[];
    };
    expect(spec.ingress.map((rule) => [rule.ports[0]?.port, rule.from[0]?.namespaceSelector.matchExpressions[0]?.values])).toEqual([
      ['https', ['agents']],
      ['metrics', ['monitoring']],
    ]);
  });

  it('opens the gateway to the peers of gateway.networkPolicy.allowedFrom too', async () => {
    const rendered = await renderChart(helm, NAMESPACE, [
      ...COMMON,
      ...set,
      'gateway.networkPolicy.allowedFrom[0].ipBlock.cidr=10.0.0.0/8',
    ]);
    if (!gatewayEnabled) {
      expect(find(rendered, 'NetworkPolicy', 'runtime-gateway', NAMESPACE)).toBeUndefined();
      return;
    }
    const spec = get(rendered, 'NetworkPolicy', 'runtime-gateway', NAMESPACE).spec as {
      ingress: { from: unknown[]; ports: { port: string }[] }[];
    };
    expect(spec.ingress).toContainEqual({ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ port: 'https', protocol: 'TCP' }] });
  });

  it('has a PodDisruptionBudget per service and ServiceMonitors for the services with metrics', () => {
    expect(
      objects
        .filter((o) => o.kind === 'PodDisruptionBudget')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(
      deployments()
        .map((d) => d.metadata.name)
        .sort(),
    );
    const monitored = [
      'kruntimes-controller-manager',
      'kruntimes-scheduler',
      'kruntimes-stale-recovery',
      ...(gatewayEnabled ? ['runtime-gateway'] : []),
    ];
    expect(
      objects
        .filter((o) => o.kind === 'ServiceMonitor')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(monitored);
    // The controller-manager's series name the Runtime's namespace themselves: that label wins over the target's.
    const honoring = objects.filter(
      (o) => o.kind === 'ServiceMonitor' && (o.spec as { endpoints: { honorLabels?: boolean }[] }).endpoints[0]?.honorLabels === true,
    );
    expect(honoring.map((o) => o.metadata.name)).toEqual(['kruntimes-controller-manager']);
  });

  it("puts the leader-elected services' Lease requests, in the release namespace only, in the API server's leader-election priority level", () => {
    const schema = get(objects, 'FlowSchema', `kruntimes-leader-election-${NAMESPACE}`);
    const spec = schema.spec as {
      priorityLevelConfiguration: { name: string };
      rules: { subjects: { serviceAccount: { name: string; namespace: string } }[]; resourceRules: unknown[] }[];
    };
    expect(spec.priorityLevelConfiguration.name).toBe('leader-election');
    expect(spec.rules).toHaveLength(1);
    expect(spec.rules[0]?.subjects.map((subject) => subject.serviceAccount)).toEqual(
      ['kruntimes-scheduler', 'kruntimes-controller-manager', 'kruntimes-stale-recovery'].map((name) => ({ name, namespace: NAMESPACE })),
    );
    expect(spec.rules[0]?.resourceRules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'], namespaces: [NAMESPACE] },
    ]);
  });

  it('ships the dashboards as ConfigMaps labelled grafana_dashboard', () => {
    const maps = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1');
    expect(
      maps
        .map((m) => Object.keys(m.data as object))
        .flat()
        .sort(),
    ).toEqual(DASHBOARDS.map((d) => d.file).sort());
    for (const map of maps)
      for (const json of Object.values(map.data as Record<string, string>)) expect(() => JSON.parse(json) as unknown).not.toThrow();
  });
});

describe('admission', () => {
  it('installs the admission policies and their bindings exactly as libs/crds renders them, and the ClusterRole granting use', async () => {
    const objects = await renderChart(helm, NAMESPACE, COMMON);
    const admission = objects.filter((o) => o.apiVersion === 'admissionregistration.k8s.io/v1');
    // helm orders by kind; the set and each object are what libs/crds renders.
    const byKindAndName = (a: { kind: string; metadata: { name: string } }, b: { kind: string; metadata: { name: string } }): number =>
      `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`);
    expect([...admission].sort(byKindAndName)).toEqual(admissionObjects().sort(byKindAndName));
    const role = get(objects, 'ClusterRole', 'kruntimes-runtime-user');
    expect(rulesOf(role)).toEqual(RUNTIME_USER_RULES);
    expect(role.metadata.labels).toMatchObject({
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
      'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
    });
  });

  it('admission.policies=false leaves the policies out; aggregateToDefaultRoles=false keeps the role to bind by hand', async () => {
    const objects = await renderChart(helm, NAMESPACE, [...COMMON, 'admission.policies=false', 'admission.aggregateToDefaultRoles=false']);
    expect(objects.filter((o) => o.apiVersion === 'admissionregistration.k8s.io/v1')).toEqual([]);
    expect(
      get(objects, 'ClusterRole', 'kruntimes-runtime-user').metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'],
    ).toBeUndefined();
  });
});

describe('gateway.resolveMode=dns', () => {
  it('global.leaderElectionFlowSchema=false leaves the FlowSchema out', async () => {
    const objects = await renderChart(helm, NAMESPACE, [...COMMON, 'global.leaderElectionFlowSchema=false']);
    expect(objects.filter((o) => o.kind === 'FlowSchema')).toEqual([]);
  });

  it('gives the gateway no Kubernetes API access (no RBAC, no token)', async () => {
    const objects = await renderChart(helm, NAMESPACE, [...COMMON, 'gateway.resolveMode=dns']);
    expect(
      objects.filter(
        (o) => o.metadata.name === 'runtime-gateway' && ['ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'].includes(o.kind),
      ),
    ).toEqual([]);
    expect(podSpec(get(objects, 'Deployment', 'runtime-gateway')).automountServiceAccountToken).toBe(false);
    expect(get(objects, 'ServiceAccount', 'runtime-gateway').automountServiceAccountToken).toBe(false);
    expect(podSpec(get(objects, 'Deployment', 'runtime-gateway')).containers[0]?.args).toContain('--resolve=dns');
  });
});

describe('global.watchNamespace', () => {
  it('turns every ClusterRole but the runtimed one (granted by RoleBindings only) and those on resources without a namespace into a Role in that namespace, and passes --namespace', async () => {
    const objects = await renderChart(helm, NAMESPACE, [...singleNamespace('team-a'), 'gateway.resolveMode=endpoints']);
    const serviceClusterRoles = objects.filter(
      (o) => o.kind === 'ClusterRole' && o.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'] === undefined,
    );
    expect(serviceClusterRoles.map((o) => o.metadata.name).sort()).toEqual([
      'kruntimes-runtimed',
      'kruntimes-scheduler-cluster-scoped',
      'kruntimes-stale-recovery-cluster-scoped',
    ]);
    expect(
      objects
        .filter((o) => o.kind === 'ClusterRoleBinding')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['kruntimes-scheduler-cluster-scoped', 'kruntimes-stale-recovery-cluster-scoped']);
    const rules = serviceRules();
    const services: [RuleSetName, string][] = [
      ['scheduler', 'kruntimes-scheduler'],
      ['controllerManager', 'kruntimes-controller-manager'],
      ['staleRecovery', 'kruntimes-stale-recovery'],
      ['gateway', 'runtime-gateway'],
    ];
    for (const [set, name] of services) {
      expect(rulesOf(get(objects, 'Role', name, 'team-a'))).toEqual(splitRules(set, rules[set]).cluster);
      expect(get(objects, 'RoleBinding', name, 'team-a').subjects).toEqual([{ kind: 'ServiceAccount', name, namespace: NAMESPACE }]);
      expect(podSpec(get(objects, 'Deployment', name)).containers[0]?.args).toContain('--namespace=team-a');
    }
  });

  it('refuses Runtime namespaces the services would not see', async () => {
    const result = await runHelm(helm, [
      'template',
      RELEASE,
      CHART_DIR,
      '--set',
      'global.watchNamespace=team-a',
      '--set',
      'runtimes.namespaces={team-a,team-b}',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('runtimes.namespaces must be exactly [team-a]');
  });
});

describe('controllerManager.gatewayEndpoint', () => {
  const gatewayArgs = async (set: string[]): Promise<string[]> =>
    (podSpec(get(await renderChart(helm, NAMESPACE, set), 'Deployment', 'kruntimes-controller-manager')).containers[0]?.args ?? []).filter(
      (arg) => arg.startsWith('--gateway-'),
    );

  it.each<[string, string[], string[]]>([
    [
      'a gateway Service port other than 443 is in the host',
      ['gateway.service.port=8443'],
      [`--gateway-host=runtime-gateway.${NAMESPACE}.svc:8443`, '--gateway-ca-file=/var/run/kruntimes/gateway-ca/ca.crt'],
    ],
    [
      'a host of its own wins',
      ['controllerManager.gatewayEndpoint.host=gw.example.com'],
      ['--gateway-host=gw.example.com', '--gateway-ca-file=/var/run/kruntimes/gateway-ca/ca.crt'],
    ],
    [
      'caBundle=false mounts and passes no CA',
      ['controllerManager.gatewayEndpoint.caBundle=false'],
      [`--gateway-host=runtime-gateway.${NAMESPACE}.svc`],
    ],
    [
      "an external gateway without the chart's",
      ['gateway.enabled=false', 'controllerManager.gatewayEndpoint.host=gw.example.com:9443'],
      ['--gateway-host=gw.example.com:9443'],
    ],
  ])('%s', async (_what, set, expected) => {
    expect(await gatewayArgs(set)).toEqual(expected);
  });
});

describe('global.tracing.otlpEndpoint', () => {
  const ENDPOINT = 'http://otel-collector.observability.svc:4318';
  const envOf = (objects: KubeObject[], name: string): Record<string, string | undefined> =>
    Object.fromEntries(
      (
        (podSpec(get(objects, 'Deployment', name)).containers[0] as { env?: { name: string; value?: string }[] } | undefined)?.env ?? []
      ).map((entry) => [entry.name, entry.value]),
    );

  it('reaches every service, with a kruntimes- service name, and the Runtime Pods through the controller-manager', async () => {
    const objects = await renderChart(helm, NAMESPACE, [...COMMON, `global.tracing.otlpEndpoint=${ENDPOINT}`]);
    expect(envOf(objects, 'runtime-gateway')).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_SERVICE_NAME: 'kruntimes-runtime-gateway',
    });
    expect(envOf(objects, 'kruntimes-scheduler')).toMatchObject({ OTEL_SERVICE_NAME: 'kruntimes-scheduler' });
    const manager = podSpec(get(objects, 'Deployment', 'kruntimes-controller-manager')).containers[0];
    expect(manager?.args).toContain(`--runtime-otlp-endpoint=${ENDPOINT}`);
  });

  it('is off by default: no endpoint anywhere', async () => {
    const objects = await renderChart(helm, NAMESPACE, COMMON);
    expect(envOf(objects, 'runtime-gateway').OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    const manager = podSpec(get(objects, 'Deployment', 'kruntimes-controller-manager')).containers[0];
    expect(manager?.args?.some((arg) => arg.startsWith('--runtime-otlp-endpoint'))).toBe(false);
  });
});

describe('gateway.maglev', () => {
  it("is on by default: the image's own entrypoint; false runs that entrypoint with node --no-maglev", async () => {
    const dockerfile = readFileSync(join(WORKSPACE_ROOT, 'deploy/docker/runtime-gateway.Dockerfile'), 'utf8');
    const [node, main] = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
    const gateway = async (set: readonly string[]): Promise<Container | undefined> =>
      podSpec(get(await renderChart(helm, NAMESPACE, [...COMMON, ...set]), 'Deployment', 'runtime-gateway')).containers[0];
    expect((await gateway([]))?.command).toBeUndefined();
    const lean = await gateway(['gateway.maglev=false']);
    expect(lean?.command).toEqual([node, '--no-maglev', main]);
    expect(lean?.args).toEqual((await gateway([]))?.args);
  });
});

describe('images', () => {
  it('take the tag from the chart appVersion by default, and a digest wins over a tag', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const objects = await renderChart(helm, NAMESPACE, [
      'scheduler.image.tag=9.9.9',
      `scheduler.image.digest=${digest}`,
      'global.image.registry=registry.example.com/acme',
      `controllerManager.runtimeImages.python.digest=${digest}`,
    ]);
    expect(podSpec(get(objects, 'Deployment', 'kruntimes-scheduler')).containers[0]?.image).toBe(
      `registry.example.com/acme/kruntimes/scheduler@${digest}`,
    );
    const manager = podSpec(get(objects, 'Deployment', 'kruntimes-controller-manager')).containers[0];
    expect(manager?.image).toBe('registry.example.com/acme/kruntimes/controller-manager:0.1.0');
    expect(manager?.args).toEqual(
      expect.arrayContaining([
        '--runtimed-image=registry.example.com/acme/kruntimes/runtimed:0.1.0',
        `--python-image=registry.example.com/acme/kruntimes/runtime-server-python@${digest}`,
        '--bash-image=registry.example.com/acme/kruntimes/runtime-server-bash:0.1.0',
      ]),
    );
  });
});

describe('values.schema.json rejects bad values', () => {
  it.each([
    ['an unknown top-level key', ['bogus=1'], "additional properties 'bogus'"],
    ['an unknown service key', ['scheduler.replica=2'], "additional properties 'replica'"],
    ['a negative replica count', ['scheduler.replicas=-1'], '/scheduler/replicas'],
    ['replicas as a string', ['controllerManager.replicas=two'], '/controllerManager/replicas'],
    ['an unknown log level', ['global.logLevel=loud'], '/global/logLevel'],
    ['a digest that is not sha256', ['gateway.image.digest=latest'], '/gateway/image/digest'],
    ['an unknown gateway resolve mode', ['gateway.resolveMode=headless'], '/gateway/resolveMode'],
    ['no internal CA at all', ['global.internalCA.existingSecret='], '/global/internalCA/existingSecret'],
    ['both an existing gateway Secret and cert-manager', ['gateway.tls.certManager.enabled=true'], '/gateway/tls/existingSecret'],
    [
      'an issuer kind cert-manager does not have',
      ['gateway.tls.certManager.issuerRef.kind=Vault'],
      '/gateway/tls/certManager/issuerRef/kind',
    ],
    ['a Runtime namespace that is not a DNS label', ['runtimes.namespaces={Team_A}'], '/runtimes/namespaces/0'],
    ['a watched namespace that is not a DNS label', ['global.watchNamespace=Team_A'], '/global/watchNamespace'],
    ['a port out of range', ['runtimes.ports.grpc=70000'], '/runtimes/ports/grpc'],
    [
      'a gateway caller that is a CIDR, not a peer',
      ['gateway.networkPolicy.allowedFrom={10.0.0.0/8}'],
      '/gateway/networkPolicy/allowedFrom/0',
    ],
    ['a bad ServiceMonitor interval', ['global.serviceMonitor.interval=often'], '/global/serviceMonitor/interval'],
    [
      'a leader lease of zero seconds',
      ['staleRecovery.leaderElection.leaseDurationSeconds=0'],
      '/staleRecovery/leaderElection/leaseDurationSeconds',
    ],
    ['a bad CPU quantity', ['scheduler.resources.requests.cpu=lots'], '/scheduler/resources/requests/cpu'],
    ['a gateway maglev that is not a boolean', ['gateway.maglev=off'], '/gateway/maglev'],
    [
      'a gateway endpoint host that is a URL',
      ['controllerManager.gatewayEndpoint.host=https://gw.example.com'],
      '/controllerManager/gatewayEndpoint/host',
    ],
  ])('%s', async (_what, set, message) => {
    const result = await runHelm(helm, [
      'template',
      RELEASE,
      CHART_DIR,
      '--namespace',
      NAMESPACE,
      ...set.flatMap((value) => ['--set', value]),
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("values don't meet the specifications of the schema");
    expect(result.stderr).toContain(message);
  });
});

describe('values.schema.json', () => {
  it('is fresh (run `npx nx run chart-checks:generate`)', () => {
    expect(readFileSync(join(WORKSPACE_ROOT, VALUES_SCHEMA_FILE), 'utf8')).toBe(renderValuesSchema());
  });
});
