import { DEFAULTS, LABELS, RUNTIMED_TLS_MOUNT_PATH } from '@kruntimes/api';
import type { Runtime } from '@kruntimes/api';
import {
  CONTAINERS,
  RUNTIME_SERVER_NODE_OPTIONS,
  SERVICE_ACCOUNT_MOUNT_PATH,
  SPEC_HASH_ANNOTATION,
  API_TOKEN_MOUNT_PATH,
  WORKSPACE_MOUNT_PATH,
  podCapacity,
  podLabelSelector,
  runIsolation,
  runtimedTlsSecret,
  runtimeWorkload,
  specHash,
  workloadProblems,
} from './workload.ts';
import type { Container } from './kube-types.ts';
import type { WorkloadConfig } from './workload.ts';

const config: WorkloadConfig = {
  runtimedImage: 'kruntimes/runtimed:1.0',
  runtimeServerImages: { python: 'kruntimes/runtime-server-python:1.0', bash: 'kruntimes/runtime-server-bash:1.0' },
  serviceAccountName: 'kruntimes-runtimed',
  runtimeServerListen: 'loopback',
};

/** The Deployment spec hash of `runtime()` with `config` at fbb2dff, before Runs had users of their own. */
const SHARED_USER_SPEC_HASH = '551953b6d52461ea';

function runtime(spec: Partial<Runtime['spec']> = {}, name = 'python'): Runtime {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Runtime',
    metadata: { name, namespace: 'team-a', uid: '6f1c2a34-0000-4000-8000-000000000001', generation: 1 },
    spec: { language: 'python', ...spec },
  };
}

function container(workload: ReturnType<typeof runtimeWorkload>, name: string): Container {
  const found = workload.deployment.spec.template.spec.containers.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no container ${name}`);
  return found;
}

function env(c: Container): Record<string, string> {
  return Object.fromEntries(c.env.map((e) => [e.name, e.value ?? `fieldRef:${e.valueFrom?.fieldRef?.fieldPath ?? ''}`]));
}

describe('runtimeWorkload', () => {
  it('makes a Deployment and a Service owned by the Runtime, selecting its Pods', () => {
    const { deployment, service } = runtimeWorkload(runtime({ replicas: 3, runs: 2 }), config);
    for (const object of [deployment, service]) {
      expect(object.metadata).toMatchObject({ name: 'python', namespace: 'team-a' });
      expect(object.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'kruntimes.io/v1alpha1',
          kind: 'Runtime',
          name: 'python',
          uid: '6f1c2a34-0000-4000-8000-000000000001',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(object.metadata.labels).toMatchObject({
        [LABELS.runtime]: 'python',
        [LABELS.partOf]: 'kruntimes',
        [LABELS.managedBy]: 'kruntimes-controller-manager',
      });
    }
    const selector = { [LABELS.runtime]: 'python', [LABELS.component]: 'runtime' };
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.selector.matchLabels).toEqual(selector);
    expect(deployment.spec.template.metadata.labels).toMatchObject(selector);
    expect(service.spec.selector).toEqual(selector);
    expect(podLabelSelector('python')).toBe('kruntimes.io/runtime=python,app.kubernetes.io/component=runtime');
  });

  it.each([
    ['defaults', {}, DEFAULTS.runtimedGrpcPort, DEFAULTS.runtimedPeerPort],
    ['custom ports', { ports: { grpc: 9443, peer: 9444 } }, 9443, 9444],
  ])('Service exposes runtimed grpc and peer (%s)', (_name, spec, grpc, peer) => {
    const workload = runtimeWorkload(runtime(spec), config);
    expect(workload.service.spec.ports).toEqual([
      { name: 'grpc', port: grpc, targetPort: 'grpc', protocol: 'TCP', appProtocol: 'grpc' },
      { name: 'peer', port: peer, targetPort: 'peer', protocol: 'TCP', appProtocol: 'grpc' },
    ]);
    expect(workload.service.spec.publishNotReadyAddresses).toBe(false);
    const runtimed = container(workload, CONTAINERS.runtimed);
    expect(runtimed.ports).toEqual([
      { name: 'grpc', containerPort: grpc, protocol: 'TCP' },
      { name: 'peer', containerPort: peer, protocol: 'TCP' },
      { name: 'health', containerPort: DEFAULTS.runtimedHealthPort, protocol: 'TCP' },
      // The chart's PodMonitor scrapes this named port.
      { name: 'metrics', containerPort: DEFAULTS.runtimedMetricsPort, protocol: 'TCP' },
    ]);
    expect(runtimed.readinessProbe?.grpc).toEqual({ port: DEFAULTS.runtimedHealthPort });
    expect(env(runtimed)).toMatchObject({
      KRT_GRPC_PORT: String(grpc),
      KRT_PEER_PORT: String(peer),
      KRT_HEALTH_PORT: String(DEFAULTS.runtimedHealthPort),
    });
  });

  it.each([
    ['python, default image', { language: 'python' as const }, 'kruntimes/runtime-server-python:1.0'],
    ['bash, default image', { language: 'bash' as const }, 'kruntimes/runtime-server-bash:1.0'],
    ['explicit image', { language: 'python' as const, image: 'example.com/my-python:3.13' }, 'example.com/my-python:3.13'],
  ])('Runtime Server image: %s', (_name, spec, image) => {
    expect(container(runtimeWorkload(runtime(spec), config), CONTAINERS.runtimeServer).image).toBe(image);
  });

  it('makes a PodDisruptionBudget of one Pod at a time, owned and labelled like the workload, selecting its Pods', () => {
    const { deployment, disruptionBudget } = runtimeWorkload(runtime({ replicas: 3 }), config);
    expect(disruptionBudget).toMatchObject({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: {
        name: 'python',
        namespace: 'team-a',
        labels: deployment.metadata.labels,
        ownerReferences: deployment.metadata.ownerReferences,
      },
      spec: { maxUnavailable: 1, selector: deployment.spec.selector },
    });
    expect(disruptionBudget.metadata.annotations?.[SPEC_HASH_ANNOTATION]).toBe(specHash(disruptionBudget.spec));
  });

  it.each<[string, Partial<Runtime['spec']>, number | undefined, number, string]>([
    ['the default drain window and stop margin', {}, undefined, DEFAULTS.drainSeconds + DEFAULTS.cancelGracePeriodSeconds + 20, '300'],
    ['a shorter drain window', { drainSeconds: 5 }, undefined, 5 + DEFAULTS.cancelGracePeriodSeconds + 20, '5'],
    ['no drain window', { drainSeconds: 0 }, undefined, DEFAULTS.cancelGracePeriodSeconds + 20, '0'],
    ['a configured stop margin comes after the drain window', { drainSeconds: 5 }, 3, 8, '5'],
  ])('gives the Pod its drain window and the stop after it: %s', (_what, spec, margin, grace, drainEnv) => {
    const workload = runtimeWorkload(runtime(spec), {
      ...config,
      ...(margin === undefined ? {} : { terminationGracePeriodSeconds: margin }),
    });
    expect(workload.deployment.spec.template.spec.terminationGracePeriodSeconds).toBe(grace);
    expect(env(container(workload, CONTAINERS.runtimed)).KRT_DRAIN_SECONDS).toBe(drainEnv);
    expect(env(container(workload, CONTAINERS.runtimeServer)).KRT_DRAIN_SECONDS).toBeUndefined();
  });

  it('runs every container as 65532:65532, non-root, with the runtime default seccomp profile, whatever the image', () => {
    for (const spec of [{ language: 'python' as const }, { language: 'python' as const, image: 'example.com/my-python:3.13' }]) {
      expect(runtimeWorkload(runtime(spec), config).deployment.spec.template.spec.securityContext).toEqual({
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      });
    }
  });

  it("walls every Run by default: its own user namespace, the Runtime Server uid 0 in it with its six capabilities and the entry's three, and the Runs uid range", () => {
    const workload = runtimeWorkload(runtime(), config);
    const pod = workload.deployment.spec.template.spec;
    expect(pod.hostUsers).toBe(false);
    const server = container(workload, CONTAINERS.runtimeServer);
    expect(server.securityContext).toEqual({
      runAsUser: 0,
      runAsGroup: 0,
      runAsNonRoot: false,
      capabilities: {
        drop: ['ALL'],
        add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_ADMIN', 'SYS_RESOURCE'],
      },
    });
    expect(env(server)).toMatchObject({
      KRT_RUN_UIDS: '20000-29999',
      KRT_API_TOKEN_FILE: `${API_TOKEN_MOUNT_PATH}/token`,
      KRT_API_TOKEN_GID: '65532',
    });
    // runtimed stays the Pod's non-root user with nothing, and only reads the token.
    const runtimed = container(workload, CONTAINERS.runtimed);
    expect(runtimed.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(env(runtimed).KRT_API_TOKEN_FILE).toBe(`${API_TOKEN_MOUNT_PATH}/token`);
    expect(Object.keys(env(runtimed))).not.toContain('KRT_RUN_UIDS');
    const tokenVolume = pod.volumes.find((v) => v.name === 'runtime-server-api');
    expect(tokenVolume?.emptyDir).toEqual({ medium: 'Memory', sizeLimit: '1Mi' });
    expect(runtimed.volumeMounts).toContainEqual({ name: 'runtime-server-api', mountPath: API_TOKEN_MOUNT_PATH, readOnly: true });
    expect(server.volumeMounts).toContainEqual({ name: 'runtime-server-api', mountPath: API_TOKEN_MOUNT_PATH });
    expect(runIsolation(config)).toBe('perRunUser');
  });

  it('with sharedUser (nodes without user namespaces) is the template of before the wall: no capability anywhere, the same spec hash', () => {
    const shared = runtimeWorkload(runtime(), { ...config, runIsolation: 'sharedUser' });
    const pod = shared.deployment.spec.template.spec;
    expect(pod.hostUsers).toBeUndefined();
    for (const c of pod.containers) {
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(Object.keys(env(c)).filter((name) => name === 'KRT_RUN_UIDS' || name.startsWith('KRT_API_TOKEN'))).toEqual([]);
      expect(c.volumeMounts.map((m) => m.name)).not.toContain('runtime-server-api');
    }
    expect(pod.volumes.map((v) => v.name)).not.toContain('runtime-server-api');
    // The hash of the template every Pod had before per-Run users: turning them off rolls nothing.
    expect(shared.deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]).toBe(SHARED_USER_SPEC_HASH);
    expect(runtimeWorkload(runtime(), config).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]).not.toBe(SHARED_USER_SPEC_HASH);
  });

  it('gives only runtimed the service-account token; the Pod mounts none by itself', () => {
    const workload = runtimeWorkload(runtime(), config);
    const pod = workload.deployment.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.serviceAccountName).toBe('kruntimes-runtimed');
    const tokenVolume = pod.volumes.find((v) => v.projected?.sources.some((s) => 'serviceAccountToken' in s));
    expect(tokenVolume).toBeDefined();
    const mountsOf = (name: string): string[] => container(workload, name).volumeMounts.map((m) => m.name);
    expect(mountsOf(CONTAINERS.runtimed)).toContain(tokenVolume?.name);
    expect(mountsOf(CONTAINERS.runtimeServer)).not.toContain(tokenVolume?.name);
    expect(container(workload, CONTAINERS.runtimed).volumeMounts).toContainEqual({
      name: tokenVolume?.name,
      mountPath: SERVICE_ACCOUNT_MOUNT_PATH,
      readOnly: true,
    });
    expect(runtimeWorkload(runtime({ serviceAccountName: 'custom' }), config).deployment.spec.template.spec.serviceAccountName).toBe(
      'custom',
    );
  });

  it('mounts the runtimed TLS Secret read-only into runtimed only, and tells runtimed where', () => {
    const workload = runtimeWorkload(runtime(), config);
    const volume = workload.deployment.spec.template.spec.volumes.find((v) => v.secret !== undefined);
    expect(volume?.secret).toEqual({ secretName: 'python-runtimed-tls', defaultMode: 0o444, optional: false });
    const runtimed = container(workload, CONTAINERS.runtimed);
    expect(runtimed.volumeMounts).toContainEqual({ name: volume?.name, mountPath: RUNTIMED_TLS_MOUNT_PATH, readOnly: true });
    expect(env(runtimed).KRT_TLS_DIR).toBe(RUNTIMED_TLS_MOUNT_PATH);
    const server = container(workload, CONTAINERS.runtimeServer);
    expect(server.volumeMounts.map((m) => m.name)).not.toContain(volume?.name);
    expect(Object.keys(env(server))).not.toContain('KRT_TLS_DIR');
  });

  it('sets no gateway env without a gateway: the template (and its hash) is what it was', () => {
    const workload = runtimeWorkload(runtime(), config);
    for (const name of [CONTAINERS.runtimed, CONTAINERS.runtimeServer]) {
      expect(Object.keys(env(container(workload, name)))).not.toEqual(expect.arrayContaining(['KRT_GATEWAY_HOST']));
      expect(Object.keys(env(container(workload, name)))).not.toEqual(expect.arrayContaining(['KRT_GATEWAY_CA_FILE']));
    }
    expect(workload.deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]).toBe(
      runtimeWorkload(runtime(), { ...config }).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION],
    );
  });

  it('tells runtimed the gateway host, and the gateway CA file in its TLS mount when there is a CA; the Runtime Server gets neither', () => {
    const withCa = runtimeWorkload(runtime(), { ...config, gateway: { host: 'runtime-gateway.kruntimes.svc:8443', caPem: 'GATEWAY CA' } });
    expect(env(container(withCa, CONTAINERS.runtimed))).toMatchObject({
      KRT_GATEWAY_HOST: 'runtime-gateway.kruntimes.svc:8443',
      KRT_GATEWAY_CA_FILE: `${RUNTIMED_TLS_MOUNT_PATH}/gateway-ca.crt`,
    });
    const hostOnly = runtimeWorkload(runtime(), { ...config, gateway: { host: 'gw.example.com' } });
    expect(env(container(hostOnly, CONTAINERS.runtimed)).KRT_GATEWAY_HOST).toBe('gw.example.com');
    expect(Object.keys(env(container(hostOnly, CONTAINERS.runtimed)))).not.toContain('KRT_GATEWAY_CA_FILE');
    for (const workload of [withCa, hostOnly]) {
      expect(Object.keys(env(container(workload, CONTAINERS.runtimeServer))).filter((name) => name.startsWith('KRT_GATEWAY'))).toEqual([]);
    }
    // The CA's content is in the Secret, not the template: another CA does not roll the Pods.
    const hash = (caPem: string): string | undefined =>
      runtimeWorkload(runtime(), { ...config, gateway: { host: 'gw', caPem } }).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION];
    expect(hash('CA 1')).toBe(hash('CA 2'));
    expect(hash('CA 1')).not.toBe(runtimeWorkload(runtime(), config).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]);
  });

  it('shares one workspace emptyDir between both containers and gives both the downward-API env', () => {
    const workload = runtimeWorkload(runtime({ runs: 4 }), config);
    const workspace = workload.deployment.spec.template.spec.volumes.find((v) => v.emptyDir !== undefined);
    for (const name of [CONTAINERS.runtimed, CONTAINERS.runtimeServer]) {
      const c = container(workload, name);
      expect(c.volumeMounts).toContainEqual({ name: workspace?.name, mountPath: WORKSPACE_MOUNT_PATH });
      expect(env(c)).toMatchObject({
        POD_NAME: 'fieldRef:metadata.name',
        POD_UID: 'fieldRef:metadata.uid',
        POD_NAMESPACE: 'fieldRef:metadata.namespace',
        POD_IP: 'fieldRef:status.podIP',
        RUNTIME_NAME: 'python',
        RUNTIME_LANGUAGE: 'python',
      });
    }
    expect(env(container(workload, CONTAINERS.runtimed)).KRT_RUNS_PER_POD).toBe('4');
  });

  it('tells runtimed the Runtime capabilities, and only when it declares some (the spec hash of other Runtimes stays)', () => {
    const declared = runtimeWorkload(runtime({ capabilities: ['checkpoint-v1'] }), config);
    expect(env(container(declared, CONTAINERS.runtimed)).KRT_RUNTIME_CAPABILITIES).toBe('checkpoint-v1');
    expect(Object.keys(env(container(declared, CONTAINERS.runtimeServer)))).not.toContain('KRT_RUNTIME_CAPABILITIES');
    for (const capabilities of [undefined, []]) {
      const plain = runtimeWorkload(runtime(capabilities === undefined ? {} : { capabilities }), config);
      expect(Object.keys(env(container(plain, CONTAINERS.runtimed)))).not.toContain('KRT_RUNTIME_CAPABILITIES');
      expect(plain.deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]).toBe(
        runtimeWorkload(runtime(), config).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION],
      );
    }
  });

  it('gives both containers the OTLP endpoint when tracing is on, and nothing (the same spec hash) when it is off', () => {
    const traced = runtimeWorkload(runtime(), { ...config, otlpEndpoint: 'http://collector:4318' });
    for (const name of [CONTAINERS.runtimed, CONTAINERS.runtimeServer])
      expect(env(container(traced, name)).OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://collector:4318');
    const plain = runtimeWorkload(runtime(), { ...config, otlpEndpoint: '' });
    expect(Object.keys(env(container(plain, CONTAINERS.runtimed)))).not.toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(plain.deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]).toBe(
      runtimeWorkload(runtime(), config).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION],
    );
  });

  it('tells runtimed a cluster retry policy that forbids automatic retries, and nothing (the same spec hash) when it allows them', () => {
    const forbidden = runtimeWorkload(runtime(), { ...config, automaticRetry: false });
    expect(env(container(forbidden, CONTAINERS.runtimed)).KRT_AUTOMATIC_RETRY).toBe('false');
    expect(Object.keys(env(container(forbidden, CONTAINERS.runtimeServer)))).not.toContain('KRT_AUTOMATIC_RETRY');
    const allowed = runtimeWorkload(runtime(), { ...config, automaticRetry: true });
    expect(Object.keys(env(container(allowed, CONTAINERS.runtimed)))).not.toContain('KRT_AUTOMATIC_RETRY');
    expect(allowed.deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION]).toBe(
      runtimeWorkload(runtime(), config).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION],
    );
  });

  it.each([
    ['loopback', '127.0.0.1:7450', false],
    ['podIP', '$(POD_IP):7450', true],
  ] as const)('Runtime Server listens on %s; runtimed dials the same address', (mode, address, probed) => {
    const workload = runtimeWorkload(runtime(), { ...config, runtimeServerListen: mode });
    const server = container(workload, CONTAINERS.runtimeServer);
    expect(env(server).KRT_LISTEN).toBe(address);
    expect(env(container(workload, CONTAINERS.runtimed)).KRT_RUNTIME_SERVER).toBe(address);
    // $(POD_IP) is expanded only from variables defined earlier in the list.
    const names = server.env.map((e) => e.name);
    expect(names.indexOf('POD_IP')).toBeLessThan(names.indexOf('KRT_LISTEN'));
    expect(server.readinessProbe !== undefined).toBe(probed);
  });

  it('gives runtimed the configured requests and limits and the V8 heap flags of its memory limit; none without', () => {
    const resources = { requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '160Mi' } };
    const sized = runtimeWorkload(runtime(), { ...config, runtimedResources: resources });
    const runtimed = container(sized, CONTAINERS.runtimed);
    expect(runtimed.resources).toEqual(resources);
    expect(env(runtimed).NODE_OPTIONS).toBe('--max-semi-space-size=1 --max-old-space-size=93');
    const unsized = container(runtimeWorkload(runtime(), config), CONTAINERS.runtimed);
    expect(unsized.resources).toBeUndefined();
    expect(env(unsized).NODE_OPTIONS).toBeUndefined();
    // A request alone, or a quantity the heap flags do not read: resources as given, V8's own sizing.
    const odd = container(runtimeWorkload(runtime(), { ...config, runtimedResources: { limits: { memory: '1e9' } } }), CONTAINERS.runtimed);
    expect(odd.resources).toEqual({ limits: { memory: '1e9' } });
    expect(env(odd).NODE_OPTIONS).toBeUndefined();
  });

  it('keeps the Runtime Server young generation small whatever its limit (which is its user code), and its resources the Runtime own', () => {
    const server = container(runtimeWorkload(runtime({ resources: { limits: { memory: '2Gi' } } }), config), CONTAINERS.runtimeServer);
    expect(env(server).NODE_OPTIONS).toBe(RUNTIME_SERVER_NODE_OPTIONS);
    expect(server.resources).toEqual({ limits: { memory: '2Gi' } });
  });

  it('is deterministic, and its spec hash changes exactly when the workload changes', () => {
    const hash = (spec: Partial<Runtime['spec']>): string | undefined =>
      runtimeWorkload(runtime(spec), config).deployment.metadata.annotations?.[SPEC_HASH_ANNOTATION];
    expect(hash({ runs: 2 })).toBe(hash({ runs: 2 }));
    expect(hash({ runs: 2 })).not.toBe(hash({ runs: 3 }));
    expect(hash({ image: 'a' })).not.toBe(hash({ image: 'b' }));
    expect(hash({ replicas: 1 })).not.toBe(hash({ replicas: 2 }));
    expect(specHash({ a: 1, b: [1, { c: 2 }] })).toBe(specHash({ b: [1, { c: 2 }], a: 1 }));
  });

  it('never shares the Runtime spec objects it copies', () => {
    const source = runtime({ resources: { limits: { cpu: '1' } } });
    const server = container(runtimeWorkload(source, config), CONTAINERS.runtimeServer);
    expect(server.resources).toEqual({ limits: { cpu: '1' } });
    expect(server.resources).not.toBe(source.spec.resources);
  });
});

describe('workloadProblems', () => {
  it.each([
    ['a valid Runtime', runtime(), []],
    ['a name that is not a DNS-1035 label', runtime({}, '1python'), [expect.stringContaining('DNS-1035') as unknown]],
    ['a dotted name', runtime({}, 'py.thon'), [expect.stringContaining('DNS-1035') as unknown]],
    ['a 64-character name', runtime({}, `p${'y'.repeat(63)}`), [expect.stringContaining('DNS-1035') as unknown]],
    ['equal ports', runtime({ ports: { grpc: 9000, peer: 9000 } }), ['ports.grpc and ports.peer are both 9000']],
    ['the Runtime Server port', runtime({ ports: { peer: 7450 } }), ["ports.peer 7450 is the Runtime Server's port"]],
    ["runtimed's health port", runtime({ ports: { grpc: 7445 } }), ["ports.grpc 7445 is runtimed's health port"]],
    ["runtimed's metrics port", runtime({ ports: { peer: 9464 } }), ["ports.peer 9464 is runtimed's metrics port"]],
  ])('%s', (_name, candidate, problems) => {
    expect(workloadProblems(candidate)).toEqual(problems);
  });
});

describe('runtimedTlsSecret', () => {
  it('is a kubernetes.io/tls Secret named <runtime>-runtimed-tls, owned and labelled like the workload', () => {
    const source = runtime();
    const secret = runtimedTlsSecret(source, { caPem: 'CA', certPem: 'CERT', keyPem: 'KEY' });
    const { deployment } = runtimeWorkload(source, config);
    expect(secret.metadata).toEqual({
      name: 'python-runtimed-tls',
      namespace: 'team-a',
      labels: deployment.metadata.labels,
      ownerReferences: deployment.metadata.ownerReferences,
    });
    expect(secret.type).toBe('kubernetes.io/tls');
    const decoded = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    expect(decoded).toEqual({ 'ca.crt': 'CA', 'tls.crt': 'CERT', 'tls.key': 'KEY' });
  });

  it('carries the gateway CA as gateway-ca.crt only when given one', () => {
    const decode = (data: Record<string, string>): Record<string, string> =>
      Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    expect(decode(runtimedTlsSecret(runtime(), { caPem: 'CA', certPem: 'CERT', keyPem: 'KEY', gatewayCaPem: 'GW' }).data)).toEqual({
      'ca.crt': 'CA',
      'tls.crt': 'CERT',
      'tls.key': 'KEY',
      'gateway-ca.crt': 'GW',
    });
    expect(
      Object.keys(runtimedTlsSecret(runtime(), { caPem: 'CA', certPem: 'CERT', keyPem: 'KEY', gatewayCaPem: undefined }).data),
    ).not.toContain('gateway-ca.crt');
  });
});

describe('podCapacity', () => {
  const podOf = (runs: number) => ({ spec: runtimeWorkload(runtime({ runs }), config).deployment.spec.template.spec });
  it.each<[string, Parameters<typeof podCapacity>[0], number | undefined]>([
    ['what the template says', podOf(4), 4],
    ['the default', { spec: runtimeWorkload(runtime(), config).deployment.spec.template.spec }, 1],
    ['no runtimed container', { spec: { containers: [{ name: 'other', env: [{ name: 'KRT_RUNS_PER_POD', value: '3' }] }] } }, undefined],
    ['not a number', { spec: { containers: [{ name: 'runtimed', env: [{ name: 'KRT_RUNS_PER_POD', value: 'x' }] }] } }, undefined],
    ['no spec', {}, undefined],
  ])('%s', (_name, pod, expected) => {
    expect(podCapacity(pod)).toBe(expected);
  });
});
