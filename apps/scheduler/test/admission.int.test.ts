import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { ADMISSION_POLICY_NAMES, API_GROUP, API_VERSION, RUN_PLURAL, RUN_SCHEDULE_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { NamespaceAccess } from '@kruntimes/testing';
import { Environment, cluster, objects } from './environment.ts';

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
