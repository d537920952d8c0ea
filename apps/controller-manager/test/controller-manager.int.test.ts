import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, Watch } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, CONDITION_TYPES, RUN_PLURAL, RUNTIME_PLURAL, RUNTIME_REASONS } from '@kruntimes/api';
import type { Run, RunSpec, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { CONTROLLER_MANAGER_RULES, ControllerManager } from '@kruntimes/controller-manager-core';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run Runtime Pods as real processes through the local node agent (a tool)
import { LocalNode } from '@kruntimes/local-node';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { CONTAINERS, podLabelSelector } from '@kruntimes/runtime-workload';
import { Cluster, REPO_ROOT, kubeConfigFor, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';

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

async function start(options: { withNode: boolean; finishedRunsPerRuntime?: number }): Promise<void> {
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
      },
      { deleteNodeOnStop: true },
    );
    await node.start();
  }
  manager = new ControllerManager({
    // Least privilege: exactly the rules the chart grants, so a missing one fails here.
    kubeConfig: await serviceAccountKubeConfig('controller-manager'),
    namespace: namespace.name,
    logger: logger(),
    workload: {
      runtimedImage: 'kruntimes/runtimed:dev',
      runtimeServerImages: { python: 'kruntimes/runtime-server-python:dev', bash: 'kruntimes/runtime-server-bash:dev' },
      serviceAccountName: 'default',
      runtimeServerListen: 'podIP',
      terminationGracePeriodSeconds: 2,
    },
    ...(options.finishedRunsPerRuntime === undefined ? {} : { finishedRunsPerRuntime: options.finishedRunsPerRuntime }),
  });
  await manager.start();
}

/** A ServiceAccount bound to CONTROLLER_MANAGER_RULES in the test namespace, as a KubeConfig. */
async function serviceAccountKubeConfig(name: string): Promise<KubeConfig> {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace: namespace.name, body: { metadata: { name } } });
  await rbac.createNamespacedRole({ namespace: namespace.name, body: { metadata: { name }, rules: CONTROLLER_MANAGER_RULES.map((rule) => ({ ...rule })) } });
  await rbac.createNamespacedRoleBinding({
    namespace: namespace.name,
    body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [{ kind: 'ServiceAccount', name, namespace: namespace.name }] },
  });
  const token = (await core.createNamespacedServiceAccountToken({ namespace: namespace.name, name, body: { spec: { audiences: [], expirationSeconds: 3600 } } })).status?.token ?? '';
  return kubeConfigFor({ server: cluster.info.server, caPem: cluster.info.caPem, user: name, token });
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
  const body: Run = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', metadata: { name }, spec: { runtime: 'gc', source: { inline: 'echo hi' }, mode: { task: {} }, ...spec } };
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

test('a Runtime of 3 replicas x 2 Runs: Deployment and Service it owns, 3 ready Pods of runtimed + Runtime Server, capacity 6; an update rolls the Pods', async () => {
  await start({ withNode: true });
  const runtime = await createRuntime('shell', { replicas: 3, runs: 2 });

  const deployment = await waitFor('the Deployment', () => apps.readNamespacedDeployment({ namespace: namespace.name, name: 'shell' }), WAIT);
  // The controller creates the Service after the Deployment: wait for it too.
  const service = await waitFor('the Service', () => core.readNamespacedService({ namespace: namespace.name, name: 'shell' }), WAIT);
  for (const owned of [deployment, service]) {
    expect(owned.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Runtime', name: 'shell', uid: runtime.metadata.uid, controller: true })]);
  }
  expect(service.spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([['grpc', 7443, 'grpc'], ['peer', 7444, 'peer']]);

  const pods = await readyPods('shell', 3);
  expect(new Set(pods.map((p) => p.status?.podIP)).size).toBe(3);
  for (const pod of pods) {
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    expect(pod.status?.containerStatuses?.map((c) => [c.name, c.ready]).sort()).toEqual([[CONTAINERS.runtimeServer, true], [CONTAINERS.runtimed, true]]);
    // The token is in runtimed's container and nowhere in the Runtime Server's.
    const runtimedLog = node!.logFile(namespace.name, pod.metadata?.name ?? '', CONTAINERS.runtimed);
    expect(await readFile(runtimedLog, 'utf8')).toContain('service-account token present: yes');
    const podDir = dirname(runtimedLog).replace(`${stateDir}/logs/`, `${stateDir}/pods/`);
    expect(existsSync(join(podDir, 'containers', CONTAINERS.runtimed, 'root/var/run/secrets/kubernetes.io/serviceaccount/token'))).toBe(true);
    expect(existsSync(join(podDir, 'containers', CONTAINERS.runtimeServer, 'root/var/run/secrets'))).toBe(false);
  }

  const status = await waitFor('Runtime status: 3 ready, capacity 6, rolled out', async () => {
    const current = (await getRuntime('shell')).status;
    const progressing = current?.conditions?.find((c) => c.type === CONDITION_TYPES.progressing);
    return current?.readyPods === 3 && current.totalCapacity === 6 && progressing?.reason === RUNTIME_REASONS.rolledOut ? current : undefined;
  }, WAIT);
  expect(status).toMatchObject({ replicas: 3, usedCapacity: 0, observedGeneration: 1 });
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)).toMatchObject({ status: 'True', reason: RUNTIME_REASONS.podsReady });

  // Updating the Runtime rolls the Deployment: every Pod is replaced by one with the new spec.
  await objects.patchNamespacedCustomObject({ ...custom(RUNTIME_PLURAL), name: 'shell', body: [{ op: 'replace', path: '/spec/runs', value: 3 }] });
  const rolled = await readyPods('shell', 3, (pod) => env(pod, CONTAINERS.runtimed, 'KRT_RUNS_PER_POD') === '3');
  expect(rolled.map((p) => p.metadata?.uid)).not.toEqual(expect.arrayContaining(pods.map((p) => p.metadata?.uid)));
  await waitFor('Runtime status: capacity 9', async () => ((await getRuntime('shell')).status?.totalCapacity === 9 ? true : undefined), WAIT);
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

    await waitFor('only the two newest finished Runs and the active ones left', async () => {
      const names = ((await objects.listNamespacedCustomObject(custom(RUN_PLURAL))) as { items: Run[] }).items.map((r) => r.metadata.name).sort();
      return JSON.stringify(names) === JSON.stringify(['hist-3', 'hist-4', 'pending', 'running']) ? names : undefined;
    }, WAIT);
    // Past the TTL of everything that has one: the active Runs are still there.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const left = ((await objects.listNamespacedCustomObject(custom(RUN_PLURAL))) as { items: Run[] }).items.map((r) => r.metadata.name).sort();
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
      spec: { replicas: 0, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'main', image: 'example.com/app' }] } } },
    },
  });
  await createRuntime('taken', { replicas: 1 });
  const status = await waitFor('the conflict in the Runtime status', async () => {
    const current = (await getRuntime('taken')).status;
    return current?.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.reason === RUNTIME_REASONS.invalidSpec ? current : undefined;
  }, WAIT);
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.message).toContain('Deployment');
  expect(status.conditions?.find((c) => c.type === CONDITION_TYPES.available)?.message).toContain('not controlled by this Runtime');
  const deployment = await apps.readNamespacedDeployment({ namespace: namespace.name, name: 'taken' });
  expect(deployment.metadata?.ownerReferences).toBeUndefined();
  expect(deployment.spec?.template.spec?.containers.map((c) => c.name)).toEqual(['main']);
  expect(errors).toEqual([]);
});
