// krt respond and krt wait --for input as a user runs them: the real CLI as a child process with
// alice's kubeconfig, the controller-manager (with exactly the chart's RBAC) deciding the
// RunInputs, and a Run put into WaitingInput as the scheduler and runtimed would.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, RUN_INPUT_PLURAL, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunInput } from '@kruntimes/api';
import { CONTROLLER_MANAGER_RULES, ControllerManager } from '@kruntimes/controller-manager-core';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { runInputName } from '@kruntimes/input-core';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, kubeconfigYaml, waitFor, testWorkloadConfig } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const CLI_TIMEOUT_MS = 60_000;
const SCHEMA = JSON.stringify({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });

let namespace: TestNamespace;
let dir: string;
let kubeconfigs: { alice: string; bob: string };
let manager: ControllerManager | undefined;
let errors: object[];

const logger: ControllerLogger = { error: (object, message) => errors.push({ ...object, message }), debug: () => undefined };
const custom = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural });

beforeEach(async () => {
  errors = [];
  namespace = await cluster.createNamespace({ prefix: 'krt-respond' });
  dir = await mkdtemp(join(tmpdir(), 'krt-respond-'));
  const params = { server: cluster.info.server, caPem: cluster.info.caPem };
  const file = async (user: 'alice' | 'bob'): Promise<string> => {
    const path = join(dir, `${user}.kubeconfig`);
    await writeFile(path, kubeconfigYaml({ ...params, user, token: cluster.user(user).token }), { mode: 0o600 });
    return path;
  };
  kubeconfigs = { alice: await file('alice'), bob: await file('bob') };
  const access = new NamespaceAccess(cluster, namespace.name);
  // alice may respond; bob may only read Runs.
  await access.grantUser('alice', 'responder', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [API_GROUP], resources: [RUN_INPUT_PLURAL], verbs: ['get', 'watch', 'create'] },
  ]);
  await access.grantGetRuns('bob');
  manager = new ControllerManager({
    kubeConfig: await access.serviceAccountKubeConfig('controller-manager', CONTROLLER_MANAGER_RULES),
    internalCa: await createCertificateAuthority(),
    namespace: namespace.name,
    logger,
    workload: testWorkloadConfig(),
  });
  await manager.start();
});
afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await rm(dir, { recursive: true, force: true });
  await namespace.delete();
  expect(errors).toEqual([]);
});

async function krt(args: string[], options: { kubeconfig?: string; stdin?: string } = {}): Promise<CliResult> {
  return runKrt(args, {
    kubeconfig: options.kubeconfig ?? kubeconfigs.alice,
    namespace: namespace.name,
    timeoutMs: CLI_TIMEOUT_MS,
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  });
}

/** Plays the scheduler and runtimed: each step a status write through the state machine. */
async function act(name: string, steps: [WriterRole, RunEvent][]): Promise<void> {
  let run = (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name })) as Run;
  for (const [writer, event] of steps) {
    const result = transition({ run, event, writer, now: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
    if (!result.ok) throw result.error;
    run = (await objects.replaceNamespacedCustomObjectStatus({
      ...custom(RUN_PLURAL),
      name,
      body: { ...run, status: result.status },
    })) as Run;
  }
}

async function createRun(name: string): Promise<void> {
  const body: Run = {
    apiVersion: API_GROUP_VERSION,
    kind: 'Run',
    metadata: { name },
    spec: { runtime: 'python', source: { inline: 'pass' }, mode: { task: {} } },
  };
  await objects.createNamespacedCustomObject({ ...custom(RUN_PLURAL), body });
  await act(name, [
    ['scheduler', { type: 'Bind', pod: 'p', podUID: '00000000-0000-4000-8000-000000000001' }],
    ['runtimed', { type: 'Claim' }],
  ]);
}

const waitForInput: [WriterRole, RunEvent] = [
  'runtimed',
  { type: 'WaitForInput', schema: SCHEMA, checkpoint: { digest: `sha256:${'ab'.repeat(32)}`, size: 10 } },
];

test('krt wait --for input prints the schema once the Run waits; krt get says how to respond', async () => {
  await createRun('report');
  const waiting = krt(['wait', 'report', '--for', 'input', '--timeout', '30s']);
  await act('report', [waitForInput]);
  const waited = await waiting;
  expect(waited.code).toBe(0);
  expect(waited.stdout).toMatch(/^run\/report WaitingInput\ninput schema:\n\{\n {2}"type": "object",/);

  const got = await krt(['get', 'report']);
  expect(got.code).toBe(0);
  expect(got.stdout).toMatch(/report\s+WaitingInput\s+WaitingInput\s+task/);
  expect(got.stderr).toContain('krt respond report --id ID --data JSON');
});

test('krt respond: accepted, repeated (the same RunInput), a duplicate, another response refused, bad input refused', async () => {
  await createRun('report');
  await act('report', [waitForInput]);

  const bad = await krt(['respond', 'report', '--id', 'bad-1', '--data', '{"approved":"yes"}']);
  expect(bad).toMatchObject({ code: 2, stdout: '' });
  expect(bad.stderr).toMatch(/^error: refused \(InputInvalid\): .*\/approved: must be boolean/);

  const ok = await krt(['respond', 'report', '--id', 'approval-1', '--data-file', '-'], { stdin: '{"approved": true}' });
  expect(ok).toMatchObject({ code: 0, stdout: 'accepted: attempt 2 continues\n' });
  const input = (await objects.getNamespacedCustomObject({
    ...custom(RUN_INPUT_PLURAL),
    name: runInputName('report', 'approval-1'),
  })) as RunInput;
  expect(input.spec).toEqual({ runName: 'report', responseId: 'approval-1', data: { approved: true } });

  // The same ID and data again: the same RunInput, its decision printed again.
  const again = await krt(['respond', 'report', '--id', 'approval-1', '--data', '{"approved":true}']);
  expect(again).toMatchObject({ code: 0, stdout: 'accepted: attempt 2 continues\n' });
  expect(again.stderr).toContain('exists with the same response');

  // The same ID with other data: an error, nothing created.
  const changed = await krt(['respond', 'report', '--id', 'approval-1', '--data', '{"approved":false}']);
  expect(changed.code).toBe(2);
  expect(changed.stderr).toContain('use another --id');

  // Another response to a Run that no longer waits.
  const late = await krt(['respond', 'report', '--id', 'approval-2', '--data', '{"approved":false}']);
  expect(late.code).toBe(5);
  expect(late.stderr).toMatch(/^error: refused \(RunNotWaiting\)/);

  const run = (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name: 'report' })) as Run;
  expect(run.status).toMatchObject({ phase: 'Pending', attempt: 2, resume: { responseId: 'approval-1' } });
});

test('krt respond: a response ID accepted through another RunInput is DuplicateResponse; no Run is not found; no RBAC is forbidden', async () => {
  await createRun('report');
  await act('report', [waitForInput]);
  const body: RunInput = {
    apiVersion: API_GROUP_VERSION,
    kind: 'RunInput',
    metadata: { name: 'from-a-script' },
    spec: { runName: 'report', responseId: 'approval-1', data: { approved: true } },
  };
  await objects.createNamespacedCustomObject({ ...custom(RUN_INPUT_PLURAL), body });
  // Continued by the script's RunInput before krt is asked.
  await waitFor(
    'the script response accepted',
    async () => {
      const run = (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name: 'report' })) as Run;
      return run.status?.attempt === 2 ? run : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );

  const duplicate = await krt(['respond', 'report', '--id', 'approval-1', '--data', '{"approved":true}']);
  expect(duplicate).toMatchObject({ code: 0, stdout: 'already accepted (DuplicateResponse): attempt 2\n' });

  const missing = await krt(['respond', 'nothing', '--id', 'x', '--data', '{}']);
  expect(missing.code).toBe(3);
  expect(missing.stderr).toMatch(/refused \(RunNotFound\)/);

  const forbidden = await krt(['respond', 'report', '--id', 'from-bob', '--data', '{"approved":true}'], { kubeconfig: kubeconfigs.bob });
  expect(forbidden.code).toBe(4);
  expect(forbidden.stderr).toContain('needs RBAC create on runinputs');
});
