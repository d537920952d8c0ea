import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  CONDITION_TYPES,
  LABELS,
  RUN_PLURAL,
  RUNTIME_PLURAL,
  RUNTIME_REASONS,
  RUNTIMED_TLS_MOUNT_PATH,
  runtimedTlsSecretName,
} from '@kruntimes/api';
import type { Run, RunSpec, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { CONTROLLER_MANAGER_RULES, ControllerManager } from '@kruntimes/controller-manager-core';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run Runtime Pods as real processes through the local node agent (a tool)
import { LocalNode } from '@kruntimes/local-node';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { CONTAINERS, podLabelSelector } from '@kruntimes/runtime-workload';
import { Cluster, NamespaceAccess, REPO_ROOT, kubeConfigFor, waitFor, testWorkloadConfig } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import {
  createCertificateAuthority,
  identityOfCertificate,
  issueWorkloadCertificate,
  needsRenewal,
  runtimeIdentity,
} from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const apps = admin.makeApiClient(AppsV1Api);
const objects = admin.makeApiClient(CustomObjectsApi);
const WAIT = { timeoutMs: 90_000, intervalMs: 200 };
const FAKE_RUNTIMED = join(REPO_ROOT, 'apps/scheduler/test/fixtures/fake-runtimed.ts');

let namespace: TestNamespace;
let node: LocalNode | undefined;
let manager: ControllerManager | undefined;
let stateDir: string;
let errors: object[];
let internalCa: CertificateAuthority;

beforeAll(async () => {
  internalCa = await createCertificateAuthority();
});

function logger(): ControllerLogger {
  return { error: (object, message) => errors.push({ ...object, message }), debug: () => undefined };
}

beforeEach(async () => {
  errors = [];
  namespace = await cluster.createNamespace({ prefix: 'controller-manager', waitForDefaultServiceAccount: true });
  stateDir = await mkdtemp(join(tmpdir(), 'controller-manager-'));
});

afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await node?.stop({ graceMs: 2_000 });
  node = undefined;
  await rm(stateDir, { recursive: true, force: true });
  await namespace.delete();
});

async function start(options: {
  withNode: boolean;
  finishedRunsPerRuntime?: number;
  ca?: CertificateAuthority;
  gateway?: { host: string; caPem?: string };
}): Promise<void> {
  if (options.withNode) {
    node = new LocalNode(
      admin,
      {
        nodeName: namespace.name,
        stateDir,
        namespaces: [namespace.name],
        images: {
          'kruntimes/runtimed': { entrypoint: [process.execPath, FAKE_RUNTIMED] },
          'kruntimes/runtime-server-bash': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-bash/src/main.ts')] },
        },
        kubeletServer: cluster.info.kubeletServer,
      },
      { deleteNodeOnStop: true },
    );
    await node.start();
  }
  manager = new ControllerManager({
    // Least privilege: exactly the rules the chart grants, so a missing one fails here.
    kubeConfig: await serviceAccountKubeConfig('controller-manager'),
    internalCa: options.ca ?? internalCa,
    namespace: namespace.name,
    logger: logger(),
    workload: testWorkloadConfig({
      terminationGracePeriodSeconds: 2,
      ...(options.gateway === undefined ? {} : { gateway: options.gateway }),
    }),
    ...(options.finishedRunsPerRuntime === undefined ? {} : { finishedRunsPerRuntime: options.finishedRunsPerRuntime }),
  });
  await manager.start();
}

/** A ServiceAccount bound to CONTROLLER_MANAGER_RULES in the test namespace, as a KubeConfig (made once per test). */
async function serviceAccountKubeConfig(name: string): Promise<KubeConfig> {
  try {
    await core.readNamespacedServiceAccount({ namespace: namespace.name, name });
    return kubeConfigFor({ server: cluster.info.server, caPem: cluster.info.caPem, user: name, token: await tokenOf(name) });
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 404)) throw error;
  }
  return new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig(name, CONTROLLER_MANAGER_RULES);
}

async function tokenOf(serviceAccount: string): Promise<string> {
  return (
    (
      await core.createNamespacedServiceAccountToken({
        namespace: namespace.name,
        name: serviceAccount,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status?.token ?? ''
  );
}

const custom = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural });

async function createRuntime(name: string, spec: Partial<RuntimeSpec>): Promise<Runtime> {
  const body: Runtime = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Runtime', metadata: { name }, spec: { language: 'bash', ...spec } };
  return (await objects.createNamespacedCustomObject({ ...custom(RUNTIME_PLURAL), body })) as Runtime;
}

async function getRuntime(name: string): Promise<Runtime> {
  return (await objects.getNamespacedCustomObject({ ...custom(RUNTIME_PLURAL), name })) as Runtime;
}

async function readyPods(runtime: string, count: number, accept: (pod: V1Pod) => boolean = () => true): Promise<V1Pod[]> {
  return waitFor(
    `${count} ready Pods of ${runtime}`,
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: namespace.name, labelSelector: podLabelSelector(runtime) })).items;
      const ready = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod) && accept(pod));
      return ready.length === count && pods.length === count ? ready : undefined;
    },
    WAIT,
  );
}

async function createRun(name: string, spec: Partial<RunSpec> = {}): Promise<void> {
  const body: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime: 'gc', source: { inline: 'echo hi' }, mode: { task: {} }, ...spec },
  };
  await objects.createNamespacedCustomObject({ ...custom(RUN_PLURAL), body });
}

/** Plays the other writers: each step a fenced status write through the state machine. */
async function act(name: string, steps: [WriterRole, RunEvent][]): Promise<void> {
  for (const [writer, event] of steps) {
    const run = (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name })) as Run;
    const result = transition({ run, event, writer, now: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
    if (!result.ok) throw result.error;
    await objects.replaceNamespacedCustomObjectStatus({ ...custom(RUN_PLURAL), name, body: { ...run, status: result.status } });
  }
}

const bind: [WriterRole, RunEvent] = ['scheduler', { type: 'Bind', pod: 'gc-pod', podUID: '00000000-0000-4000-8000-000000000001' }];
const claim: [WriterRole, RunEvent] = ['runtimed', { type: 'Claim' }];
const succeed: [WriterRole, RunEvent] = ['runtimed', { type: 'Succeeded' }];

function env(pod: V1Pod, container: string, name: string): string | undefined {
  return pod.spec?.containers.find((c) => c.name === container)?.env?.find((e) => e.name === name)?.value;
}

test('a Runtime of 3 replicas x 2 Runs: Deployment and Service it owns, 3 ready Pods of runtimed + Runtime Server, capacity 6; an update rolls the Pods, the status saying RollingOut from its first version of the new spec until they run it', async () => {
  await start({ withNode: true });
  const runtime = await createRuntime('shell', { replicas: 3, runs: 2 });

  const deployment = await waitFor(
    'the Deployment',
    () => apps.readNamespacedDeployment({ namespace: namespace.name, name: 'shell' }),
    WAIT,
  );
  // The controller creates the Service after the Deployment: wait for it too.
  const service = await waitFor('the Service', () => core.readNamespacedService({ namespace: namespace.name, name: 'shell' }), WAIT);
  for (const owned of [deployment, service]) {
    expect(owned.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Runtime', name: 'shell', uid: runtime.metadata.uid, controller: true }),
    ]);
  }
  expect(service.spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([
    ['grpc', 7443, 'grpc'],
    ['peer', 7444, 'peer'],
  ]);

  const pods = await readyPods('shell', 3);
  expect(new Set(pods.map((p) => p.status?.podIP)).size).toBe(3);
  for (const pod of pods) {
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.status?.containerStatuses?.map((c) => [c.name, c.ready]).sort()).toEqual([
      [CONTAINERS.runtimeServer, true],
      [CONTAINERS.runtimed, true],
    ]);
    // The token is in runtimed's container and nowhere in the Runtime Server's.
    const runtimedLog = node!.logFile(namespace.name, pod.metadata?.name ?? '', CONTAINERS.runtimed);
    expect(await readFile(runtimedLog, 'utf8')).toContain('service-account token present: yes');
    // The TLS Secret is mounted at KRT_TLS_DIR in runtimed's container only.
    expect(await readFile(runtimedLog, 'utf8')).toContain('TLS certificate present: yes');
    const podDir = dirname(runtimedLog).replace(`${stateDir}/logs/`, `${stateDir}/pods/`);
    expect(existsSync(join(podDir, 'containers', CONTAINERS.runtimed, 'root/var/run/secrets/kubernetes.io/serviceaccount/token'))).toBe(
      true,
    );
    expect(existsSync(join(podDir, 'containers', CONTAINERS.runtimeServer, 'root/var/run/secrets'))).toBe(false);
    expect(existsSync(join(podDir, 'containers', CONTAINERS.runtimeServer, 'root/var/run/kruntimes'))).toBe(false);
  }

  const status = await waitFor(
    'Runtime status: 3 ready, capacity 6, rolled out',
    async () => {
      const current = (await getRuntime('shell')).status;
      const progressing = current?.conditions?.find((c) => c.type === CONDITION_TYPES.progressing);
      return current?.readyPods === 3 && current.totalCapacity === 6 && progressing?.reason === RUNTIME_REASONS.rolledOut
        ? current
        : undefined;
    },
    WAIT,
  );
  expect(status).toMatchObject({ replicas: 3, usedCapacity: 0, observedGeneration: 1 });
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)).toMatchObject({
    status: 'True',
    reason: RUNTIME_REASONS.podsReady,
  });

  // Every status the Runtime has while it rolls (a watch sees each version, a poll could miss one).
  const seen: { generation: number | undefined; progressing: string | undefined }[] = [];
  const watch = await new Watch(admin).watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace.name}/${RUNTIME_PLURAL}`,
    { fieldSelector: 'metadata.name=shell' },
    (_type: string, object: Runtime) => {
      const progressing = object.status?.conditions?.find((c) => c.type === CONDITION_TYPES.progressing);
      seen.push({ generation: object.status?.observedGeneration, progressing: progressing?.reason });
    },
    () => undefined,
  );
  try {
    // Updating the Runtime rolls the Deployment: every Pod is replaced by one with the new spec.
    await objects.patchNamespacedCustomObject({
      ...custom(RUNTIME_PLURAL),
      name: 'shell',
      body: [{ op: 'replace', path: '/spec/runs', value: 3 }],
    });
    const rolled = await readyPods('shell', 3, (pod) => env(pod, CONTAINERS.runtimed, 'KRT_RUNS_PER_POD') === '3');
    expect(rolled.map((p) => p.metadata?.uid)).not.toEqual(expect.arrayContaining(pods.map((p) => p.metadata?.uid)));
    await waitFor(
      'Runtime status: capacity 9, rolled out at generation 2',
      async () => {
        const current = (await getRuntime('shell')).status;
        const progressing = current?.conditions?.find((c) => c.type === CONDITION_TYPES.progressing);
        return current?.totalCapacity === 9 && current.observedGeneration === 2 && progressing?.reason === RUNTIME_REASONS.rolledOut
          ? true
          : undefined;
      },
      WAIT,
    );
  } finally {
    watch.abort();
  }
  // The first status of the new spec comes from the pass that rewrote the Deployment: it says
  // the Pods are rolling (a client waiting for RolledOut, as `kubectl wait` does, must not be
  // told the old Pods run the new spec).
  expect(seen.find((version) => version.generation === 2)?.progressing).toBe(RUNTIME_REASONS.rollingOut);
  expect(errors).toEqual([]);
});

test('TTL cleanup and completed-Run GC delete only finished Runs', async () => {
  await start({ withNode: false, finishedRunsPerRuntime: 2 });
  await createRuntime('gc', { replicas: 0 });
  const deleted: string[] = [];
  const watch = await new Watch(admin).watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace.name}/${RUN_PLURAL}`,
    {},
    (type: string, run: Run) => {
      if (type === 'DELETED') deleted.push(`${run.metadata.name ?? ''}:${run.status?.phase ?? 'Pending'}`);
    },
    () => undefined,
  );
  try {
    // Active Runs, one of them with a TTL that would long have expired had it finished.
    await createRun('pending', { ttlSecondsAfterFinished: 0 });
    await createRun('running', { ttlSecondsAfterFinished: 0 });
    await act('running', [bind, claim]);
    // Finished Runs, oldest first: the TTL one, then four without TTL.
    await createRun('ttl-done', { ttlSecondsAfterFinished: 1 });
    await act('ttl-done', [bind, claim, succeed]);
    for (const name of ['hist-1', 'hist-2', 'hist-3', 'hist-4']) {
      // completionTime has whole seconds: one second apart, "newest" is unambiguous.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await createRun(name);
      await act(name, [bind, claim, succeed]);
    }

    await waitFor(
      'only the two newest finished Runs and the active ones left',
      async () => {
        const names = ((await objects.listNamespacedCustomObject(custom(RUN_PLURAL))) as { items: Run[] }).items
          .map((r) => r.metadata.name)
          .sort();
        return JSON.stringify(names) === JSON.stringify(['hist-3', 'hist-4', 'pending', 'running']) ? names : undefined;
      },
      WAIT,
    );
    // Past the TTL of everything that has one: the active Runs are still there.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const left = ((await objects.listNamespacedCustomObject(custom(RUN_PLURAL))) as { items: Run[] }).items
      .map((r) => r.metadata.name)
      .sort();
    expect(left).toEqual(['hist-3', 'hist-4', 'pending', 'running']);
    expect(deleted.sort()).toEqual(['hist-1:Succeeded', 'hist-2:Succeeded', 'ttl-done:Succeeded']);
    expect(errors).toEqual([]);
  } finally {
    watch.abort();
  }
});

test('a Runtime whose name is taken by a Deployment it does not own adopts nothing and says why', async () => {
  await start({ withNode: false });
  const labels = { app: 'someone-else' };
  await apps.createNamespacedDeployment({
    namespace: namespace.name,
    body: {
      metadata: { name: 'taken' },
      spec: {
        replicas: 0,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'main', image: 'example.com/app' }] } },
      },
    },
  });
  await createRuntime('taken', { replicas: 1 });
  const status = await waitFor(
    'the conflict in the Runtime status',
    async () => {
      const current = (await getRuntime('taken')).status;
      return current?.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.reason === RUNTIME_REASONS.invalidSpec
        ? current
        : undefined;
    },
    WAIT,
  );
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.message).toContain('Deployment');
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.message).toContain('not controlled by this Runtime');
  const deployment = await apps.readNamespacedDeployment({ namespace: namespace.name, name: 'taken' });
  expect(deployment.metadata?.ownerReferences).toBeUndefined();
  expect(deployment.spec?.template.spec?.containers.map((c) => c.name)).toEqual(['main']);
  expect(errors).toEqual([]);
});

// ------------------------------------------------------------------ runtimed TLS Secret

async function readSecret(name: string): Promise<V1Secret | undefined> {
  try {
    return await core.readNamespacedSecret({ namespace: namespace.name, name });
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

function secretText(secret: V1Secret, key: string): string {
  return Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
}

/** Waits until the Runtime's Deployment has `replicas`: proof that a reconcile ran after the change. */
async function setReplicasAndWait(runtime: string, replicas: number): Promise<void> {
  await objects.patchNamespacedCustomObject({
    ...custom(RUNTIME_PLURAL),
    name: runtime,
    body: [{ op: 'replace', path: '/spec/replicas', value: replicas }],
  });
  await waitFor(
    `Deployment ${runtime} with ${replicas} replicas`,
    async () => {
      const deployment = await apps.readNamespacedDeployment({ namespace: namespace.name, name: runtime });
      return deployment.spec?.replicas === replicas ? true : undefined;
    },
    WAIT,
  );
}

test('a new Runtime gets its runtimed TLS Secret (contract SANs and identity, chained to the CA) before its Deployment; resyncs never rewrite it; it goes with the Runtime', async () => {
  await start({ withNode: false });
  const runtime = await createRuntime('tls', { replicas: 0 });
  const deployment = await waitFor('the Deployment', () => apps.readNamespacedDeployment({ namespace: namespace.name, name: 'tls' }), WAIT);
  const secret = await readSecret(runtimedTlsSecretName('tls'));
  if (secret === undefined) throw new Error('the Deployment exists but the TLS Secret does not');
  expect(Date.parse(String(secret.metadata?.creationTimestamp))).toBeLessThanOrEqual(
    Date.parse(String(deployment.metadata?.creationTimestamp)),
  );
  expect(secret.type).toBe('kubernetes.io/tls');
  expect(secret.metadata?.ownerReferences).toEqual([
    expect.objectContaining({ kind: 'Runtime', name: 'tls', uid: runtime.metadata.uid, controller: true }),
  ]);
  expect(secret.metadata?.labels).toEqual(deployment.metadata?.labels);
  expect(secret.metadata?.labels?.[LABELS.runtime]).toBe('tls');
  expect(Object.keys(secret.data ?? {}).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);

  expect(secretText(secret, 'ca.crt')).toBe(internalCa.certPem);
  const cert = new X509Certificate(secretText(secret, 'tls.crt'));
  const ca = new X509Certificate(internalCa.certPem);
  expect(cert.checkIssued(ca)).toBe(true);
  expect(cert.verify(ca.publicKey)).toBe(true);
  expect(cert.subjectAltName?.split(', ').sort()).toEqual([
    `DNS:tls.${namespace.name}.svc`,
    `DNS:tls.${namespace.name}.svc.cluster.local`,
    `URI:spiffe://kruntimes.io/ns/${namespace.name}/runtime/tls`,
  ]);
  expect(identityOfCertificate(cert.toString())).toBe(runtimeIdentity(namespace.name, 'tls'));
  expect([...cert.keyUsage].sort()).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  expect(cert.validToDate.getTime() - cert.validFromDate.getTime()).toBe(30 * 86_400_000 + 5 * 60_000);
  expect(needsRenewal(cert.toString(), internalCa.certPem, new Date())).toBe(false);

  // Reconciles (each proven by the Deployment following the Runtime), also by a fresh
  // controller-manager that lists everything anew: the Secret is never written again.
  await setReplicasAndWait('tls', 1);
  await manager?.stop();
  await start({ withNode: false });
  await setReplicasAndWait('tls', 0);
  expect((await readSecret(runtimedTlsSecretName('tls')))?.metadata?.resourceVersion).toBe(secret.metadata?.resourceVersion);

  // Deleting the Runtime garbage-collects the Secret (kube-controller-manager, by the owner reference).
  await objects.deleteNamespacedCustomObject({ ...custom(RUNTIME_PLURAL), name: 'tls' });
  await waitFor(
    'the TLS Secret collected',
    async () => ((await readSecret(runtimedTlsSecretName('tls'))) === undefined ? true : undefined),
    WAIT,
  );
  expect(errors).toEqual([]);
});

test('a certificate near its expiry, or from another CA, is reissued; a Secret the Runtime does not own stops its workload', async () => {
  await start({ withNode: false });
  await createRuntime('renew', { replicas: 0 });
  const name = runtimedTlsSecretName('renew');
  const first = await waitFor('the TLS Secret', () => readSecret(name), WAIT);

  // Put in a certificate with a sixth of its 30 days left, as if it had been issued 25 days ago.
  const old = await issueWorkloadCertificate(internalCa, {
    namespace: namespace.name,
    runtime: 'renew',
    now: new Date(Date.now() - 25 * 86_400_000),
  });
  expect(needsRenewal(old.certPem, internalCa.certPem, new Date())).toBe(true);
  const replaced = await core.replaceNamespacedSecret({
    namespace: namespace.name,
    name,
    body: {
      metadata: first.metadata ?? {},
      type: 'kubernetes.io/tls',
      data: {
        ...first.data,
        'tls.crt': Buffer.from(old.certPem).toString('base64'),
        'tls.key': Buffer.from(old.keyPem).toString('base64'),
      },
    },
  });
  const renewed = await waitFor(
    'the certificate renewed',
    async () => {
      const current = await readSecret(name);
      return current !== undefined && current.metadata?.resourceVersion !== replaced.metadata?.resourceVersion ? current : undefined;
    },
    WAIT,
  );
  const renewedPem = secretText(renewed, 'tls.crt');
  expect(renewedPem).not.toBe(old.certPem);
  expect(needsRenewal(renewedPem, internalCa.certPem, new Date())).toBe(false);
  expect(identityOfCertificate(renewedPem)).toBe(runtimeIdentity(namespace.name, 'renew'));
  expect(new X509Certificate(renewedPem).checkPrivateKey(createPrivateKey(secretText(renewed, 'tls.key')))).toBe(true);

  // A controller-manager with another CA (the CA was rotated) reissues from it.
  await manager?.stop();
  const rotated = await createCertificateAuthority();
  await start({ withNode: false, ca: rotated });
  const reissued = await waitFor(
    'the certificate reissued by the new CA',
    async () => {
      const current = await readSecret(name);
      return current !== undefined && secretText(current, 'ca.crt') === rotated.certPem ? current : undefined;
    },
    WAIT,
  );
  expect(new X509Certificate(secretText(reissued, 'tls.crt')).checkIssued(new X509Certificate(rotated.certPem))).toBe(true);

  // A Secret of that name that the Runtime does not own: nothing is created, the status says why.
  await core.createNamespacedSecret({
    namespace: namespace.name,
    body: { metadata: { name: runtimedTlsSecretName('squatted') }, type: 'Opaque', data: { x: 'eA==' } },
  });
  await createRuntime('squatted', { replicas: 1 });
  const status = await waitFor(
    'the conflict in the Runtime status',
    async () => {
      const current = (await getRuntime('squatted')).status;
      return current?.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.reason === RUNTIME_REASONS.invalidSpec
        ? current
        : undefined;
    },
    WAIT,
  );
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.message).toContain(
    `Secret ${namespace.name}/squatted-runtimed-tls exists and is not controlled by this Runtime`,
  );
  await expect(apps.readNamespacedDeployment({ namespace: namespace.name, name: 'squatted' })).rejects.toMatchObject({ code: 404 });
  expect((await readSecret(runtimedTlsSecretName('squatted')))?.data).toEqual({ x: 'eA==' });
  expect(errors).toEqual([]);
});

test('with a gateway: the TLS Secret carries its CA as gateway-ca.crt and the Pod template tells runtimed the host and the file; only a changed gateway CA rewrites the Secret, keeping the certificate', async () => {
  const gatewayCa = await createCertificateAuthority();
  const host = 'runtime-gateway.kruntimes-system.svc:8443';
  await start({ withNode: false, gateway: { host, caPem: gatewayCa.certPem } });
  await createRuntime('gw', { replicas: 0 });
  const deployment = await waitFor('the Deployment', () => apps.readNamespacedDeployment({ namespace: namespace.name, name: 'gw' }), WAIT);
  const name = runtimedTlsSecretName('gw');
  const secret = await readSecret(name);
  if (secret === undefined) throw new Error('the Deployment exists but the TLS Secret does not');
  expect(Object.keys(secret.data ?? {}).sort()).toEqual(['ca.crt', 'gateway-ca.crt', 'tls.crt', 'tls.key']);
  expect(secretText(secret, 'gateway-ca.crt')).toBe(gatewayCa.certPem);
  expect(secretText(secret, 'ca.crt')).toBe(internalCa.certPem);
  const runtimedEnv = (d: typeof deployment): Record<string, string | undefined> =>
    Object.fromEntries(
      (d.spec?.template.spec?.containers.find((c) => c.name === CONTAINERS.runtimed)?.env ?? []).map((e) => [e.name, e.value]),
    );
  expect(runtimedEnv(deployment)).toMatchObject({
    KRT_GATEWAY_HOST: host,
    KRT_GATEWAY_CA_FILE: `${RUNTIMED_TLS_MOUNT_PATH}/gateway-ca.crt`,
  });
  const serverEnv =
    deployment.spec?.template.spec?.containers.find((c) => c.name === CONTAINERS.runtimeServer)?.env?.map((e) => e.name) ?? [];
  expect(serverEnv.filter((n) => n.startsWith('KRT_GATEWAY'))).toEqual([]);

  // A fresh controller-manager with the same gateway: reconciles, never a write of the Secret.
  await manager?.stop();
  await start({ withNode: false, gateway: { host, caPem: gatewayCa.certPem } });
  await setReplicasAndWait('gw', 1);
  expect((await readSecret(name))?.metadata?.resourceVersion).toBe(secret.metadata?.resourceVersion);

  // Another gateway CA: gateway-ca.crt follows, the certificate and key stay.
  await manager?.stop();
  const rotated = await createCertificateAuthority();
  await start({ withNode: false, gateway: { host, caPem: rotated.certPem } });
  const updated = await waitFor(
    'gateway-ca.crt rewritten',
    async () => {
      const current = await readSecret(name);
      return current !== undefined && secretText(current, 'gateway-ca.crt') === rotated.certPem ? current : undefined;
    },
    WAIT,
  );
  for (const key of ['ca.crt', 'tls.crt', 'tls.key']) expect(secretText(updated, key)).toBe(secretText(secret, key));

  // No gateway any more: the key goes and the template is the one without it.
  await manager?.stop();
  await start({ withNode: false });
  const without = await waitFor(
    'gateway-ca.crt removed',
    async () => {
      const current = await readSecret(name);
      return current !== undefined && current.data?.['gateway-ca.crt'] === undefined ? current : undefined;
    },
    WAIT,
  );
  expect(secretText(without, 'tls.crt')).toBe(secretText(secret, 'tls.crt'));
  const plain = await waitFor(
    'the Deployment without gateway env',
    async () => {
      const current = await apps.readNamespacedDeployment({ namespace: namespace.name, name: 'gw' });
      return Object.keys(runtimedEnv(current)).some((n) => n.startsWith('KRT_GATEWAY')) ? undefined : current;
    },
    WAIT,
  );
  expect(plain.spec?.replicas).toBe(1);
  expect(errors).toEqual([]);
});
