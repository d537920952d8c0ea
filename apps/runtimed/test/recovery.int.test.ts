import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { createChannel, createClient } from 'nice-grpc';
import type { Client } from 'nice-grpc';
import type { Run } from '@kruntimes/api';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { NotOwnerError, RunClient } from '@kruntimes/runtimed-core';
import { waitFor } from '@kruntimes/testing';
import { RUNTIME_SERVER_PORT, RuntimeEnvironment } from './runtime-pods.ts';

/** Imports slowly and records every import: one line per registration that loaded it. */
const SLOW_MODULE = `
import os, time
with open(os.environ["IMPORT_LOG"], "a") as f:
    f.write("imported\\n")
time.sleep(3)

def handle(event, context):
    return event
`;

let env: RuntimeEnvironment;
let pod: V1Pod;
let scratch: string;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-recovery');
  pod = await env.createRuntimePod('python-0', 'python');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-recovery-'));
});

afterAll(async () => {
  await env.stop();
  await rm(scratch, { recursive: true, force: true });
});

const phase = (run: Run) => run.status?.phase;

test('runtimed killed in the middle of a registration and restarted: exactly one registration, Run Ready', async () => {
  const importLog = join(scratch, 'imports.log');
  await env.createRun('slow', {
    runtime: 'rt',
    source: { inline: SLOW_MODULE },
    mode: { function: { handler: 'main:handle' } },
    env: [{ name: 'IMPORT_LOG', value: importLog }],
  });
  await env.bind('slow', pod);
  // The module is being imported: RegisterFunction is in flight.
  await waitFor('the import to begin', async () => ((await readFile(importLog, 'utf8').catch(() => '')) === '' ? undefined : true), {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  expect(phase(await env.getRun('slow'))).toBe('Running');
  const runtimedPid = (await env.logs('python-0', 'runtimed')).find((l) => l.msg === 'runtimed started')?.pid;
  env.node.crashContainer(env.name, 'python-0', 'runtimed', 'SIGKILL');

  const ready = await env.waitForRun('slow', 'Ready', (r) => phase(r) === 'Ready');
  expect(ready.status).toMatchObject({ attempt: 1, assignedPodUID: pod.metadata?.uid });
  expect(await readFile(importLog, 'utf8')).toBe('imported\n');
  const runtimedLogs = await env.logs('python-0', 'runtimed');
  const registrations = runtimedLogs.filter(
    (l) => l.runUID === ready.metadata.uid && typeof l.registrationId === 'string' && typeof l.created === 'boolean',
  );
  // The restarted process (another pid) got the registration the first one started.
  expect(registrations).toHaveLength(1);
  expect(registrations[0]).toMatchObject({ created: false });
  expect(registrations[0]?.pid).not.toBe(runtimedPid);
  const serverLogs = await env.logs('python-0', 'runtime-server');
  expect(serverLogs.filter((l) => l.msg === 'registered' && l.runUid === ready.metadata.uid)).toHaveLength(1);
});

test('a status write from a stale attempt or another Pod UID is refused and changes nothing', async () => {
  const runs = new RunClient(env.admin);
  const created = await env.createRun('fenced', { runtime: 'nobody-runs-this', source: { inline: 'x' }, mode: { task: {} } });
  const ownerPod = { metadata: { name: 'owner', uid: '0f0f0f0f-0000-4000-8000-000000000001' } };
  const bound = await env.bind('fenced', ownerPod);
  const epoch = { namespace: env.name, name: 'fenced', uid: created.metadata.uid ?? '', attempt: 1, podUID: ownerPod.metadata.uid };
  const claimed = await runs.transition(epoch, { type: 'Claim' });
  expect(claimed.status).toMatchObject({ phase: 'Running', attempt: 1 });
  expect(bound.metadata.resourceVersion).not.toBe(claimed.metadata.resourceVersion);

  const before = await env.getRun('fenced');
  const stale = [
    { ...epoch, attempt: 0 },
    { ...epoch, attempt: 2 },
    { ...epoch, podUID: '0f0f0f0f-0000-4000-8000-000000000002' },
    { ...epoch, uid: '0f0f0f0f-0000-4000-8000-000000000003' },
  ];
  for (const wrong of stale) {
    await expect(runs.transition(wrong, { type: 'Succeeded', outputs: { x: '1' } })).rejects.toBeInstanceOf(NotOwnerError);
    await expect(runs.addFinalizer(wrong, ['Running'])).rejects.toBeInstanceOf(NotOwnerError);
  }
  // A writer that read before another write landed is refused by the API server itself.
  await expect(
    env.objects.replaceNamespacedCustomObjectStatus({
      group: 'kruntimes.io',
      version: 'v1alpha1',
      namespace: env.name,
      plural: 'runs',
      name: 'fenced',
      body: { ...bound, status: { ...bound.status, phase: 'Failed' } },
    }),
  ).rejects.toMatchObject({ code: 409 });
  const after = await env.getRun('fenced');
  expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  expect(after.status).toEqual(before.status);
  expect(after.metadata.finalizers).toEqual(before.metadata.finalizers);
});

/** The local Runtime Server of a test Pod (loopback), for what the gateway will do later. */
function runtimeServer(target: V1Pod): Client<runtimeServerV1.RuntimeServerDefinition> {
  return createClient(runtimeServerV1.RuntimeServerDefinition, createChannel(`${target.status?.podIP ?? ''}:${RUNTIME_SERVER_PORT}`));
}

async function registrationIdOf(uid: string): Promise<string> {
  const entry = (await env.logs('python-0', 'runtimed')).find((l) => l.runUID === uid && typeof l.registrationId === 'string');
  if (typeof entry?.registrationId !== 'string') throw new Error(`no registration logged for ${uid}`);
  return entry.registrationId;
}

const CRASHING = `
import os

def crash(event, context):
    os._exit(9)
`;

test('a fatal Runtime Server error makes the Run not ready and enters registration recovery: a new attempt registers again', async () => {
  const created = await env.createRun('crashy', {
    runtime: 'rt',
    source: { inline: CRASHING },
    mode: { function: { handler: 'main:crash' } },
    retryPolicy: { maxAttempts: 3, initialBackoffSeconds: 1, maxBackoffSeconds: 1 },
  });
  await env.bind('crashy', pod);
  await env.waitForRun('crashy', 'Ready', (r) => phase(r) === 'Ready');
  const registrationId = await registrationIdOf(created.metadata.uid ?? '');
  // The handler kills its worker: the registration fails fatally in the Runtime Server.
  await expect(
    runtimeServer(pod).invokeFunction({
      registrationId,
      invocationId: 'crash-1',
      payload: Buffer.from('null'),
      timeout: durationFromMillis(10_000),
    }),
  ).rejects.toThrow();
  const requeued = await env.waitForRun('crashy', 'requeued for attempt 2', (r) => phase(r) === 'Pending' && r.status?.attempt === 2);
  expect(requeued.status?.message).toContain('the registration failed');
  const logs = await env.logs('python-0', 'runtimed');
  expect(logs.some((l) => l.runUID === created.metadata.uid && l.msg === 'registration lost; recovering')).toBe(true);
  await env.waitForTime(requeued.status?.notBefore ?? '');
  await env.bind('crashy', pod);
  const again = await env.waitForRun('crashy', 'Ready at attempt 2', (r) => phase(r) === 'Ready' && r.status?.attempt === 2);
  expect(again.status?.endpoint?.url).toContain(`/functions/${created.metadata.uid ?? ''}:invoke`);
});

test('after a restart runtimed converges: a Ready function keeps its one registration, and a cancel then completes', async () => {
  const created = await env.createRun('survivor', {
    runtime: 'rt',
    source: { inline: CRASHING },
    mode: { function: { handler: 'main:crash' } },
  });
  await env.bind('survivor', pod);
  await env.waitForRun('survivor', 'Ready', (r) => phase(r) === 'Ready');
  const uid = created.metadata.uid ?? '';
  const registrationId = await registrationIdOf(uid);
  env.node.crashContainer(env.name, 'python-0', 'runtimed', 'SIGKILL');
  // The restarted runtimed re-lists, finds the Ready Run and asks for the same attempt: same ID.
  await waitFor(
    'the restarted runtimed to take the registration over',
    async () =>
      (await env.logs('python-0', 'runtimed')).some((l) => l.runUID === uid && l.registrationId === registrationId && l.created === false)
        ? true
        : undefined,
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  await env.patchRunSpec('survivor', { cancelRequested: true });
  await env.waitForRun('survivor', 'Cancelled', (r) => phase(r) === 'Cancelled' && (r.metadata.finalizers ?? []).length === 0);
  const serverLogs = (await env.logs('python-0', 'runtime-server')).filter((l) => l.runUid === uid);
  expect(serverLogs.filter((l) => l.msg === 'registered')).toHaveLength(1);
  expect(serverLogs.filter((l) => l.msg === 'unregistered')).toEqual([expect.objectContaining({ registrationId })]);
});

test('a restarted Runtime Server lost the registration: the Run leaves Ready and a new attempt registers', async () => {
  const created = await env.createRun('orphaned', {
    runtime: 'rt',
    source: { inline: CRASHING },
    mode: { function: { handler: 'main:crash' } },
    retryPolicy: { maxAttempts: 2, initialBackoffSeconds: 1, maxBackoffSeconds: 1 },
  });
  await env.bind('orphaned', pod);
  await env.waitForRun('orphaned', 'Ready', (r) => phase(r) === 'Ready');
  env.node.crashContainer(env.name, 'python-0', 'runtime-server', 'SIGKILL');
  const requeued = await env.waitForRun('orphaned', 'requeued for attempt 2', (r) => phase(r) === 'Pending' && r.status?.attempt === 2);
  expect(requeued.status?.message).toContain('no longer hold');
  await env.waitForTime(requeued.status?.notBefore ?? '');
  await env.bind('orphaned', pod);
  const again = await env.waitForRun('orphaned', 'Ready at attempt 2', (r) => phase(r) === 'Ready' && r.status?.attempt === 2);
  expect(again.metadata.uid).toBe(created.metadata.uid);
});

test('two writers racing on one Run: the loser gets a 409, re-reads, re-checks its epoch and applies its change on top', async () => {
  let conflicts = 0;
  const runs = new RunClient(env.admin, {
    onConflict: () => {
      conflicts += 1;
    },
  });
  const ownerPod = { metadata: { name: 'owner', uid: '0f0f0f0f-0000-4000-8000-000000000004' } };
  for (let i = 0; i < 10 && conflicts === 0; i += 1) {
    const name = `race-${i}`;
    const created = await env.createRun(name, {
      runtime: 'nobody-runs-this',
      source: { inline: 'x' },
      mode: { function: { handler: 'main:f' } },
    });
    await env.bind(name, ownerPod);
    const epoch = { namespace: env.name, name, uid: created.metadata.uid ?? '', attempt: 1, podUID: ownerPod.metadata.uid };
    // Both read the same resourceVersion; the API server accepts one write and refuses the other.
    await Promise.all([runs.transition(epoch, { type: 'Claim' }), runs.addFinalizer(epoch, ['Scheduled', 'Running'])]);
    const after = await env.getRun(name);
    expect(after.status?.phase).toBe('Running');
    expect(after.metadata.finalizers).toEqual(['kruntimes.io/registration-cleanup']);
    // Nothing is registered anywhere for these: release them so the namespace can go.
    await runs.removeFinalizer(epoch);
  }
  expect(conflicts).toBeGreaterThan(0);
});
