import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubernetesObjectApi, loadAllYaml } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_SCHEDULE_PLURAL, SCHEDULE_ANNOTATIONS } from '@kruntimes/api';
import type { Run, RunSchedule } from '@kruntimes/api';
import { currentPhase, isTerminal } from '@kruntimes/run-state';
import { SCHEDULE_CONTROLLER_RULES, ScheduleController } from '@kruntimes/schedule-core';
import { ADMIN_USER, NamespaceAccess, REPO_ROOT, waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';
import { fileLogger } from '../src/logs.ts';

// examples/ as a user applies it (every file, into one namespace), then each example does
// what its comments promise, on real Runtime Pods and through the real gateway.
const EXAMPLES = join(REPO_ROOT, 'examples');

let system: System;
let adminKubeconfig: string;
const applied: string[] = [];

beforeAll(async () => {
  system = await System.start({ prefix: 'e2e-examples' });
  // The controller-manager app's schedule controller, as its own ServiceAccount with its rules.
  const schedules = new ScheduleController({
    kubeConfig: await new NamespaceAccess(system.cluster, system.name).serviceAccountKubeConfig(
      'schedule-controller',
      SCHEDULE_CONTROLLER_RULES,
    ),
    namespace: system.name,
    logger: fileLogger(join(system.dir, 'schedule-controller.log'), 'schedule-controller'),
  });
  await schedules.start();
  system.adopt(schedules);
  adminKubeconfig = (await system.cluster.writeKubeconfigs(join(system.dir, 'kubeconfigs')))[ADMIN_USER] ?? '';
  const api = KubernetesObjectApi.makeApiClient(system.admin);
  for (const file of (await readdir(EXAMPLES)).filter((name) => name.endsWith('.yaml')).sort()) {
    for (const object of loadAllYaml(await readFile(join(EXAMPLES, file), 'utf8')) as KubernetesObject[]) {
      const metadata = object.metadata ?? {};
      metadata.namespace = system.name;
      object.metadata = metadata;
      await api.create(object);
      applied.push(`${file}: ${object.kind ?? ''}/${metadata.name ?? ''}`);
    }
  }
}, 180_000);

afterAll(async () => {
  await system.stop();
});

const ended = (run: Run): boolean => isTerminal(currentPhase(run));

test('every file of examples/ applies as it is', () => {
  expect(applied).toEqual([
    'function-run.yaml: Run/add',
    'invoker-rbac.yaml: ServiceAccount/add-invoker',
    'invoker-rbac.yaml: Role/invoke-add',
    'invoker-rbac.yaml: RoleBinding/add-invoker-invokes-add',
    'run-from-configmap.yaml: ConfigMap/report-code',
    'run-from-configmap.yaml: Run/report',
    'run-schedule.yaml: RunSchedule/disk-usage',
    'runtime-bash.yaml: Runtime/bash',
    'runtime-python.yaml: Runtime/python',
    'task-run-retry-safe.yaml: Run/count-words',
  ]);
});

test('the Runtimes come up with the Pods they ask for', async () => {
  expect(await system.waitRuntimeReady('python', 2)).toHaveLength(2);
  expect(await system.waitRuntimeReady('bash', 1)).toHaveLength(1);
}, 180_000);

test('the retry-safe Bash task and the task from a ConfigMap succeed', async () => {
  for (const name of ['count-words', 'report']) {
    const run = await system.waitForRun(name, 'its end', ended);
    expect({ name, phase: currentPhase(run), exitCode: run.status?.exitCode }).toEqual({ name, phase: 'Succeeded', exitCode: 0 });
  }
}, 180_000);

test('the ServiceAccount of invoker-rbac.yaml invokes add, and only add', async () => {
  const add = await system.waitReady('add');
  const request = await system.core.createNamespacedServiceAccountToken({
    namespace: system.name,
    name: 'add-invoker',
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const token = request.status?.token ?? '';
  const sum = await system.invoke({ runtime: 'python', uid: add.metadata.uid ?? '', token, body: '{"a": 1, "b": 2}' });
  expect({ status: sum.status, json: sum.json }).toMatchObject({ status: 200, json: { result: { sum: 3 } } });
  // The Role names one Run: another Run of the namespace is refused to the same caller.
  const report = await system.getRun('report');
  const refused = await system.invoke({ runtime: 'python', uid: report.metadata.uid ?? '', token, body: '{}' });
  expect(refused.status).toBe(403);
}, 180_000);

/** `krt ARGS` in its own process, as the example's comments run it. */
async function krt(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const main = join(REPO_ROOT, 'apps/krt/src/main.ts');
  return promisify(execFile)(process.execPath, [main, '--kubeconfig', adminKubeconfig, '-n', system.name, ...args], {
    env: { ...process.env, KUBECONFIG: '' },
    timeout: 60_000,
  });
}

test('the RunSchedule gets its next time in its zone, and `krt schedule trigger` runs it now, once per ID', async () => {
  const schedule = await waitFor(
    'disk-usage scheduling, with a next time',
    async () => {
      const found = (await system.objects.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: system.name,
        plural: RUN_SCHEDULE_PLURAL,
        name: 'disk-usage',
      })) as RunSchedule;
      return found.status?.nextRunAt === undefined ? undefined : found;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  expect(schedule.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Scheduling', status: 'True' }));
  // Every 15 minutes: the next time is a quarter hour (Europe/Berlin is whole hours from UTC).
  expect(new Date(schedule.status?.nextRunAt ?? '').getUTCMinutes() % 15).toBe(0);

  const first = await krt('schedule', 'trigger', 'disk-usage', '--id', 'manual-1');
  const again = await krt('schedule', 'trigger', 'disk-usage', '--id', 'manual-1');
  const name = first.stdout.trim().replace(/^run\//, '');
  expect({ first: first.stdout, again: again.stdout }).toEqual({ first: `run/${name}\n`, again: `run/${name}\n` });
  expect(again.stderr).toContain('already triggered');
  const run = await system.waitForRun(name, 'its end', ended);
  expect({ phase: currentPhase(run), annotation: run.metadata.annotations?.[SCHEDULE_ANNOTATIONS.triggerId] }).toEqual({
    phase: 'Succeeded',
    annotation: 'manual-1',
  });
  expect((await krt('schedule', 'get')).stdout).toMatch(/^disk-usage +\*\/15 \* \* \* \* +Europe\/Berlin +false /m);
}, 180_000);
