import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { KubernetesObjectApi, loadAllYaml } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { currentPhase, isTerminal } from '@kruntimes/run-state';
import { REPO_ROOT } from '@kruntimes/testing';
import { System } from '../src/index.ts';

// examples/ as a user applies it (every file, into one namespace), then each example does
// what its comments promise, on real Runtime Pods and through the real gateway.
const EXAMPLES = join(REPO_ROOT, 'examples');

let system: System;
const applied: string[] = [];

beforeAll(async () => {
  system = await System.start({ prefix: 'e2e-examples' });
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
