// krt schedule as a user runs it: the real CLI as a child process with a kubeconfig file,
// against the real control plane. No schedule controller runs here: trigger creates the Run itself.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABELS, RUN_PLURAL, RUN_SCHEDULE_PLURAL, SCHEDULE_ANNOTATIONS } from '@kruntimes/api';
import type { Run, RunSchedule } from '@kruntimes/api';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const cluster = Cluster.fromEnvironment();
const objects = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
const CLI_TIMEOUT_MS = 60_000;

let namespace: TestNamespace;
let dir: string;
let kubeconfig: string;

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'krt-schedule' });
  dir = await mkdtemp(join(tmpdir(), 'krt-schedule-'));
  kubeconfig = (await cluster.writeKubeconfigs(dir)).admin ?? '';
  const body: RunSchedule = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunSchedule',
    metadata: { name: 'nightly' },
    spec: {
      schedule: '30 2 * * *',
      timeZone: 'Europe/Berlin',
      runTemplate: { spec: { runtime: 'bash', source: { inline: 'echo hi' }, mode: { task: {} } } },
    },
  };
  await objects.createNamespacedCustomObject({ ...target(RUN_SCHEDULE_PLURAL), body });
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await namespace.delete();
});

function target(plural: string): { group: string; version: string; namespace: string; plural: string } {
  return { group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural };
}

async function krt(args: string[]): Promise<CliResult> {
  return runKrt(args, { kubeconfig, namespace: namespace.name, timeoutMs: CLI_TIMEOUT_MS });
}

async function runsOfSchedule(): Promise<Run[]> {
  const list = (await objects.listNamespacedCustomObject({ ...target(RUN_PLURAL), labelSelector: `${LABELS.schedule}=nightly` })) as {
    items: Run[];
  };
  return list.items;
}

it('a manual trigger retried with the same --id is one Run; another ID is another Run', async () => {
  const first = await krt(['schedule', 'trigger', 'nightly', '--id', 'deploy-42']);
  expect(first.code).toBe(0);
  expect(first.stdout).toMatch(/^run\/nightly-m-[0-9a-f]{8}\n$/);
  const retried = await krt(['schedule', 'trigger', 'nightly', '--id', 'deploy-42']);
  expect({ code: retried.code, stdout: retried.stdout }).toEqual({ code: 0, stdout: first.stdout });
  expect(retried.stderr).toContain('already triggered');

  const runs = await runsOfSchedule();
  expect(runs).toHaveLength(1);
  const run = runs[0]!;
  expect(`run/${run.metadata.name ?? ''}\n`).toBe(first.stdout);
  expect(run.metadata.annotations?.[SCHEDULE_ANNOTATIONS.triggerId]).toBe('deploy-42');
  expect(run.metadata.annotations?.[SCHEDULE_ANNOTATIONS.scheduledAt]).toBeUndefined();
  expect(run.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'RunSchedule', name: 'nightly', controller: true });

  expect((await krt(['schedule', 'trigger', 'nightly', '--id', 'deploy-43'])).code).toBe(0);
  expect(await runsOfSchedule()).toHaveLength(2);
});

it('suspend and resume set spec.suspend; get prints the schedule; a missing one exits 3', async () => {
  expect(await krt(['schedule', 'suspend', 'nightly'])).toMatchObject({ code: 0, stdout: 'runschedule/nightly suspended\n' });
  const get = await krt(['schedule', 'get']);
  expect(get.code).toBe(0);
  expect(get.stdout.split('\n')[0]).toMatch(/^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+NEXT RUN\s+AGE$/);
  expect(get.stdout.split('\n')[1]).toMatch(/^nightly\s+30 2 \* \* \*\s+Europe\/Berlin\s+true\s+0\s+/);
  expect(await krt(['schedule', 'resume', 'nightly'])).toMatchObject({ code: 0, stdout: 'runschedule/nightly resumed\n' });
  const json = await krt(['schedule', 'get', 'nightly', '-o', 'json']);
  expect((JSON.parse(json.stdout) as RunSchedule).spec.suspend).toBe(false);
  const missing = await krt(['schedule', 'get', 'weekly']);
  expect(missing.code).toBe(3);
  expect(missing.stderr).toContain('RunSchedule "weekly" not found');
});
