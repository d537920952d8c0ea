import { ApiException, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import {
  ADMISSION_POLICY_NAMES,
  API_GROUP,
  API_VERSION,
  ORIGIN_LABEL,
  RUN_PLURAL,
  RUN_REASONS,
  RUN_SCHEDULE_PLURAL,
  RUNTIME_PLURAL,
  RUNTIME_USER_RULES,
} from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { NamespaceAccess, waitFor } from '@kruntimes/testing';
import { Environment, WAIT, admin, cluster, objects, recordingLogger, serviceAccountKubeConfig } from './environment.ts';

// The admission policies of the chart (deploy/charts/kruntimes/admission/policies.yaml,
// applied by the test control plane exactly as the chart ships them).
let env: Environment;

beforeEach(async () => {
  env = await Environment.start('admission');
});

afterEach(async () => {
  await env.stop();
});

const RUN_RULES = [{ apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'create', 'update', 'patch'] }];

function runBody(name: string, runtime: string, extra: Partial<Run['spec']> = {}): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime, source: { inline: 'echo hi' }, mode: { task: {} }, ...extra },
  };
}

async function createAs(user: string, body: Run): Promise<Run> {
  const api = cluster.kubeConfig(user).makeApiClient(CustomObjectsApi);
  return (await api.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUN_PLURAL,
    body,
  })) as Run;
}

/** The refusal's code and message, or undefined when the call succeeded. */
async function refusal(call: Promise<unknown>): Promise<{ code: number; message: string } | undefined> {
  try {
    await call;
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body = (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as { message?: string };
    return { code: error.code, message: body.message ?? '' };
  }
}

test('a user without use on the Runtime is refused at create with the policy message; with it the Run records its creator, whatever the client sent, and it never changes', async () => {
  const access = new NamespaceAccess(cluster, env.name);
  await access.grantUser('alice', 'run-author', RUN_RULES);

  const refused = await refusal(createAs('alice', runBody('no-use', 'shell')));
  expect(refused?.code).toBe(403);
  expect(refused?.message).toContain(`ValidatingAdmissionPolicy '${ADMISSION_POLICY_NAMES.runAdmission}'`);
  expect(refused?.message).toContain(`user alice may not create this Run: it names Runtime ${env.name}/shell`);
  expect(refused?.message).toContain('needs the verb use on runtimes.kruntimes.io');

  // `use` on one Runtime by name: that one only.
  await access.grantUser('alice', 'use-shell', [{ ...RUNTIME_USER_RULES[0], resourceNames: ['shell'] }]);
  // A forged creator is replaced by the real one.
  const created = await createAs('alice', runBody('with-use', 'shell', { creator: { username: 'admin', groups: ['system:masters'] } }));
  expect(created.spec.creator).toEqual({ username: 'alice', groups: ['system:authenticated'] });
  expect((await refusal(createAs('alice', runBody('other', 'python'))))?.message).toContain('Runtime ' + env.name + '/python');

  // The admin's Runs record the admin; nobody may change a creator afterwards.
  const byAdmin = await env.createRun('by-admin', 'shell');
  expect(byAdmin.spec.creator?.username).toBe('admin');
  expect(byAdmin.spec.creator?.groups).toContain('system:masters');
  const changed = await refusal(
    objects.patchNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: env.name,
      plural: RUN_PLURAL,
      name: 'with-use',
      body: [{ op: 'replace', path: '/spec/creator/username', value: 'bob' }],
    }),
  );
  expect(changed?.message).toContain('spec.creator is immutable');
  const removed = await refusal(
    cluster
      .kubeConfig('alice')
      .makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: env.name,
        plural: RUN_PLURAL,
        name: 'with-use',
        body: [{ op: 'remove', path: '/spec/creator' }],
      }),
  );
  expect(removed?.message).toContain('spec.creator is immutable');
  expect((await env.getRun('with-use')).spec.creator?.username).toBe('alice');
});

test('a RunSchedule naming a Runtime its writer may not use is refused (the controller-manager creates its Runs as itself)', async () => {
  const access = new NamespaceAccess(cluster, env.name);
  await access.grantUser('bob', 'schedule-author', [
    { apiGroups: [API_GROUP], resources: [RUN_SCHEDULE_PLURAL], verbs: ['get', 'create', 'update'] },
  ]);
  const api = cluster.kubeConfig('bob').makeApiClient(CustomObjectsApi);
  const body = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunSchedule',
    metadata: { name: 'nightly' },
    spec: {
      schedule: '@daily',
      suspend: true,
      runTemplate: { spec: { runtime: 'shell', source: { inline: 'echo hi' }, mode: { task: {} } } },
    },
  };
  const create = (): Promise<unknown> =>
    api.createNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: env.name, plural: RUN_SCHEDULE_PLURAL, body });
  const refused = await refusal(create());
  expect(refused?.code).toBe(403);
  expect(refused?.message).toContain(`user bob may not create or change this RunSchedule: it names Runtime ${env.name}/shell`);
  await access.grantUser('bob', 'use-runtimes', RUNTIME_USER_RULES);
  expect(await refusal(create())).toBeUndefined();
});

test('a right revoked after create keeps the Run Pending with reason Forbidden and an Event, never bound; granted again, it binds', async () => {
  const access = new NamespaceAccess(cluster, env.name);
  await access.grantUser('alice', 'run-author', RUN_RULES);
  await access.grantUser('alice', 'use-runtimes', RUNTIME_USER_RULES);
  await env.createRuntime('shell', { replicas: 1, runs: 4, suspend: true });
  await env.readyPods('shell', 1);
  const observer = await env.observeRuns(4);
  const logger = recordingLogger();
  const scheduler = new Scheduler({
    kubeConfig: await serviceAccountKubeConfig(env.name, 'scheduler', SCHEDULER_RULES),
    namespace: env.name,
    logger,
    accessRecheckMs: 1_000,
  });
  await scheduler.start();
  try {
    // Created while alice may use the Runtime; it waits (suspended), so nobody reviewed her yet.
    await createAs('alice', runBody('revoked', 'shell'));
    await env.waitForRun('revoked', 'RuntimeSuspended', (run) => run.status?.reason === RUN_REASONS.runtimeSuspended);

    // The right revoked while it waits, then the Runtime resumed: refused at assignment.
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const binding = await rbac.readNamespacedRoleBinding({ namespace: env.name, name: 'use-runtimes' });
    await rbac.deleteNamespacedRoleBinding({ namespace: env.name, name: 'use-runtimes' });
    await objects.patchNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: env.name,
      plural: RUNTIME_PLURAL,
      name: 'shell',
      body: [{ op: 'replace', path: '/spec/suspend', value: false }],
    });
    const forbidden = await env.waitForRun('revoked', 'Pending with Forbidden', (run) => run.status?.reason === RUN_REASONS.forbidden);
    expect(forbidden.status?.phase ?? 'Pending').toBe('Pending');
    expect(forbidden.status?.message).toContain('user alice, who created the Run, may no longer use Runtime shell');
    const event = await waitFor(
      'a Forbidden Event on the Run',
      async () =>
        (
          await admin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: env.name, fieldSelector: 'involvedObject.name=revoked' })
        ).items.find((e) => e.reason === RUN_REASONS.forbidden && e.type === 'Warning'),
      WAIT,
    );
    expect(event.message).toContain('may no longer use Runtime shell');

    // Others are not held up: the admin's Run binds meanwhile, and the refused one stays refused.
    await env.createRun('by-admin', 'shell');
    await env.waitForRun('by-admin', 'bound', (run) => run.status?.phase === 'Scheduled');
    const passes = scheduler.metrics.passes;
    await waitFor(
      'two more placement passes (the recheck)',
      () => Promise.resolve(scheduler.metrics.passes >= passes + 2 ? true : undefined),
      WAIT,
    );
    expect((await env.getRun('revoked')).status?.reason).toBe(RUN_REASONS.forbidden);
    expect(observer.everAssigned.has('revoked')).toBe(false);

    // Granted again: bound within the denial's cache TTL and the recheck, without any event about the Run.
    await rbac.createNamespacedRoleBinding({
      namespace: env.name,
      body: { metadata: { name: 'use-runtimes' }, roleRef: binding.roleRef, subjects: binding.subjects ?? [] },
    });
    const bound = await env.waitForRun('revoked', 'bound after the right was granted again', (run) => run.status?.phase === 'Scheduled');
    expect(bound.spec.creator?.username).toBe('alice');
    observer.stop();
    expect(observer.watchErrors).toEqual([]);
    expect(observer.doubleBound()).toEqual([]);
    expect(logger.errors).toEqual([]);
  } finally {
    observer.stop();
    await scheduler.stop();
  }
});

test('a synced local Run (spec.origin) keeps its origin label: created without it refused, its removal or change refused; other labels change', async () => {
  const origin = {
    local: {
      runId: '20261204-153000-a1b2c3',
      lockDigest: `sha256:${'0'.repeat(64)}`,
      result: {
        phase: 'Succeeded' as const,
        reason: 'Completed',
        message: '',
        startTime: '2026-12-04T15:30:00Z',
        completionTime: '2026-12-04T15:30:01Z',
      },
    },
  };
  const synced = (name: string, labels?: Record<string, string>): Run => ({
    ...runBody(name, 'shell', { origin }),
    metadata: { name, ...(labels === undefined ? {} : { labels }) },
  });
  const create = (body: Run): Promise<unknown> =>
    objects.createNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: env.name, plural: RUN_PLURAL, body });
  const patch = (name: string, body: object[]): Promise<unknown> =>
    objects.patchNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: env.name, plural: RUN_PLURAL, name, body });
  const labelPath = `/metadata/labels/${ORIGIN_LABEL.replace('/', '~1')}`;
  const message = `a Run with spec.origin (synced by krt sync) carries the label ${ORIGIN_LABEL}=local`;

  for (const labels of [undefined, { [ORIGIN_LABEL]: 'cluster' }]) {
    const refused = await refusal(create(synced('unlabelled', labels)));
    expect({ labels, code: refused?.code, message: refused?.message }).toEqual({
      labels,
      code: 422,
      message: expect.stringContaining(message) as string,
    });
  }
  await create(synced('local', { [ORIGIN_LABEL]: 'local' }));
  for (const change of [
    { op: 'remove', path: labelPath },
    { op: 'replace', path: labelPath, value: 'cluster' },
    { op: 'remove', path: '/metadata/labels' },
  ]) {
    expect({ change, message: (await refusal(patch('local', [change])))?.message }).toEqual({
      change,
      message: expect.stringContaining(message) as string,
    });
  }
  await patch('local', [{ op: 'add', path: '/metadata/labels/team', value: 'a' }]);
  expect((await env.getRun('local')).metadata.labels).toEqual({ [ORIGIN_LABEL]: 'local', team: 'a' });

  // A Run the platform executes has no origin: the label means nothing there.
  await create({ ...runBody('platform', 'shell'), metadata: { name: 'platform', labels: { [ORIGIN_LABEL]: 'local' } } });
  await patch('platform', [{ op: 'remove', path: labelPath }]);
  expect((await env.getRun('platform')).metadata.labels ?? {}).toEqual({});
});
