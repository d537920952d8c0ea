import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { REGISTRATION_CLEANUP_FINALIZER, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { FunctionMode, Run, RunSpec } from '@kruntimes/api';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { findCondition } from '@kruntimes/run-state';
import { NamespaceAccess, ensureBinaries, waitFor } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';
import { GATEWAY_HOST, RUNTIME_SERVER_PORT, RuntimeEnvironment } from './runtime-pods.ts';

/** Runs a command with optional stdin; rejects with its stderr on a non-zero exit. */
function execFileAsync(
  file: string,
  args: string[],
  options: { timeout: number; input?: string },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { timeout: options.timeout }, (error, stdout, stderr) => {
      if (error === null) resolve({ stdout, stderr });
      else reject(new Error(`${file} ${args.join(' ')}: ${stderr || error.message}`));
    });
    child.stdin?.end(options.input ?? '');
  });
}

const HANDLER = `
def handle(event, context):
    return event
`;

const SLOW_HANDLER = `
import time

def slow(event, context):
    time.sleep(event["seconds"])
    return "slept"
`;

let env: RuntimeEnvironment;
let pod: V1Pod;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-fn');
  pod = await env.createRuntimePod('python-0', 'python');
});

afterAll(async () => {
  await env.stop();
});

const phase = (run: Run) => run.status?.phase;

async function readyFunction(name: string, fn: Partial<FunctionMode> = {}, spec: Partial<RunSpec> = {}): Promise<Run> {
  await env.createRun(name, { runtime: 'rt', source: { inline: HANDLER }, mode: { function: { handler: 'main:handle', ...fn } }, ...spec });
  await env.bind(name, pod);
  return env.waitForRun(name, 'Ready', (run) => phase(run) === 'Ready');
}

test('a function Run goes Scheduled -> Running -> Ready with its endpoint and Ready=True FunctionRegistered, then is cancelled', async () => {
  const run = await readyFunction('cancel-me');
  expect(run.status).toMatchObject({
    phase: 'Ready',
    attempt: 1,
    assignedPod: 'python-0',
    assignedPodUID: pod.metadata?.uid,
    endpoint: {
      protocol: 'HTTPS',
      url: `https://${GATEWAY_HOST}/v1/namespaces/${env.name}/runtimes/rt/functions/${run.metadata.uid ?? ''}:invoke`,
    },
  });
  expect(run.status?.startTime).toBeDefined();
  expect(findCondition(run.status?.conditions, 'Ready')).toMatchObject({ status: 'True', reason: 'FunctionRegistered' });
  expect(run.metadata.finalizers).toContain(REGISTRATION_CLEANUP_FINALIZER);

  await env.patchRunSpec('cancel-me', { cancelRequested: true });
  const cancelled = await env.waitForRun('cancel-me', 'Cancelled', (r) => phase(r) === 'Cancelled');
  expect(findCondition(cancelled.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'Cancelled' });
  const final = await env.waitForRun(
    'cancel-me',
    'finalizer released',
    (r) => !(r.metadata.finalizers ?? []).includes(REGISTRATION_CLEANUP_FINALIZER),
  );
  expect(phase(final)).toBe('Cancelled');
  const serverLogs = await env.logs('python-0', 'runtime-server');
  expect(serverLogs.filter((l) => l.msg === 'unregistered' && l.runUid === run.metadata.uid)).toHaveLength(1);
});

test('deleting a Ready function Run unregisters it, removes its workspace, and only then removes the finalizer', async () => {
  const run = await readyFunction('delete-me');
  const uid = run.metadata.uid ?? '';
  await env.deleteRun('delete-me');
  await env.waitForRunGone('delete-me');
  const steps = (await env.logs('python-0', 'runtimed')).filter((l) => l.runUID === uid && typeof l.step === 'string').map((l) => l.step);
  expect(steps).toEqual(['unregistered', 'workspace-removed', 'finalizer-removed']);
  const serverLogs = await env.logs('python-0', 'runtime-server');
  expect(serverLogs.filter((l) => l.msg === 'unregistered' && l.runUid === uid)).toHaveLength(1);
});

test('a function Run past spec.timeout since startTime ends in Timeout and is unregistered', async () => {
  const run = await readyFunction('lifetime', {}, { timeout: '3s' });
  const ended = await env.waitForRun('lifetime', 'Timeout', (r) => phase(r) === 'Timeout');
  expect(ended.status).toMatchObject({ reason: 'Timeout' });
  expect(findCondition(ended.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'Timeout' });
  await env.waitForRun('lifetime', 'finalizer released', (r) => !(r.metadata.finalizers ?? []).includes(REGISTRATION_CLEANUP_FINALIZER));
  const serverLogs = await env.logs('python-0', 'runtime-server');
  expect(serverLogs.filter((l) => l.msg === 'unregistered' && l.runUid === run.metadata.uid)).toHaveLength(1);
});

test('a function Run with no invocation for idleTimeoutSeconds ends in Timeout with reason IdleTimeout', async () => {
  await readyFunction('idle', { idleTimeoutSeconds: 2 });
  const ended = await env.waitForRun('idle', 'Timeout', (r) => phase(r) === 'Timeout');
  expect(ended.status).toMatchObject({ phase: 'Timeout', reason: 'IdleTimeout' });
  expect(ended.status?.message).toContain('idleTimeoutSeconds');
});

test('a registration that keeps failing is retried per retryPolicy, counting attempts from 1, then Failed', async () => {
  await env.createRun('broken', {
    runtime: 'rt',
    source: { inline: HANDLER },
    mode: { function: { handler: 'main:missing' } },
    retryPolicy: { maxAttempts: 2, initialBackoffSeconds: 1, maxBackoffSeconds: 1 },
  });
  await env.bind('broken', pod);
  // runtimed requeues its failed attempt through Pending (capacity is free during the
  // backoff); this test plays the scheduler and binds it again once the backoff is over.
  const requeued = await env.waitForRun('broken', 'requeued for attempt 2', (r) => phase(r) === 'Pending' && r.status?.attempt === 2);
  expect(requeued.status).toMatchObject({ reason: 'RetryBackoff' });
  expect(requeued.status?.assignedPodUID).toBeUndefined();
  expect(requeued.metadata.finalizers ?? []).not.toContain(REGISTRATION_CLEANUP_FINALIZER);
  await env.waitForTime(requeued.status?.notBefore ?? '');
  await env.bind('broken', pod);
  const failed = await env.waitForRun('broken', 'Failed', (r) => phase(r) === 'Failed');
  expect(failed.status).toMatchObject({ phase: 'Failed', attempt: 2, reason: 'RegistrationFailed' });
  expect(failed.status?.message).toContain('no function');
  expect(failed.metadata.finalizers ?? []).not.toContain(REGISTRATION_CLEANUP_FINALIZER);
});

test('a user with RBAC on runs only creates a function Run with kubectl, and kubectl wait --for=condition=Ready returns', async () => {
  await new NamespaceAccess(env.cluster, env.name).grantUser('alice', 'run-user', [
    { apiGroups: ['kruntimes.io'], resources: ['runs'], verbs: ['create', 'get', 'list', 'watch', 'delete'] },
    // Creating a Run needs `use` on its Runtime (the admission policy).
    ...RUNTIME_USER_RULES,
  ]);
  const dir = await mkdtemp(join(tmpdir(), 'runtimed-kubectl-'));
  try {
    const kubeconfig = (await env.cluster.writeKubeconfigs(dir)).alice ?? '';
    // The kubectl built with the control plane from the same pinned module, not the machine's.
    const kubectlPath = join(await ensureBinaries(), 'kubectl');
    const kubectl = (args: string[], input?: string) =>
      execFileAsync(kubectlPath, ['--kubeconfig', kubeconfig, '--namespace', env.name, ...args], {
        timeout: 90_000,
        ...(input === undefined ? {} : { input }),
      });
    const manifest = JSON.stringify({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name: 'by-kubectl' },
      spec: { runtime: 'rt', source: { inline: HANDLER }, mode: { function: { handler: 'main:handle' } } },
    });
    await kubectl(['create', '-f', '-'], manifest);
    // alice may not touch status: the test plays the scheduler with its own rights.
    await expect(
      kubectl(['patch', 'run', 'by-kubectl', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Ready"}}']),
    ).rejects.toThrow(/forbidden/);
    await env.bind('by-kubectl', pod);
    const { stdout } = await kubectl(['wait', '--for=condition=Ready', 'run/by-kubectl', '--timeout=60s']);
    expect(stdout).toContain('condition met');
    const { stdout: table } = await kubectl(['get', 'run', 'by-kubectl']);
    expect(table).toMatch(/by-kubectl\s+Ready\s+FunctionRegistered\s+function\s+rt\s+python-0\s+1/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('runtimed renews a Lease for its Pod and exports its metrics for Prometheus on the Pod IP', async () => {
  const lease = await env.admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: env.name, name: 'python-0' });
  expect(lease.spec).toMatchObject({ holderIdentity: pod.metadata?.uid, leaseDurationSeconds: 90 });
  expect(lease.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Pod', name: 'python-0', uid: pod.metadata?.uid })]);

  const response = await fetch(`http://${pod.status?.podIP ?? ''}:9464/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  const value = (series: string): number =>
    Number(new RegExp(`^${series.replaceAll(/[{}"]/g, '\\$&')} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  // Every Run of this file registered once; the broken one failed twice.
  expect(value('kruntimes_runtimed_registrations_total{outcome="registered"}')).toBeGreaterThanOrEqual(5);
  expect(value('kruntimes_runtimed_registrations_total{outcome="failed"}')).toBe(2);
  // by-kubectl is still Ready.
  expect(value('kruntimes_runtimed_active_functions')).toBe(1);
  expect(value('kruntimes_runtimed_lease_renewals_total{result="ok"}')).toBeGreaterThanOrEqual(1);
  expect(text).toContain('kruntimes_runtimed_status_write_conflicts_total');
});

test('deleting a function Run with an invocation in flight lets that invocation finish before it unregisters', async () => {
  await env.createRun('busy', { runtime: 'rt', source: { inline: SLOW_HANDLER }, mode: { function: { handler: 'main:slow' } } });
  await env.bind('busy', pod);
  const run = await env.waitForRun('busy', 'Ready', (r) => phase(r) === 'Ready');
  const uid = run.metadata.uid ?? '';
  const registration = (await env.logs('python-0', 'runtimed')).find((l) => l.runUID === uid && typeof l.registrationId === 'string');
  const registrationId = String(registration?.registrationId);
  const server = createClient(runtimeServerV1.RuntimeServerDefinition, createChannel(`${pod.status?.podIP ?? ''}:${RUNTIME_SERVER_PORT}`));
  // What the dataplane will do: one invocation, in flight while the Run is deleted.
  const invocation = server.invokeFunction({
    registrationId,
    invocationId: 'in-flight',
    payload: Buffer.from('{"seconds": 2}'),
    timeout: durationFromMillis(30_000),
  });
  await waitFor(
    'the invocation to be in flight',
    async () => ((await server.functionStatus({ registrationId })).inFlight === 1 ? true : undefined),
    { timeoutMs: 10_000, intervalMs: 20 },
  );
  await env.deleteRun('busy');
  const response = await invocation;
  expect(JSON.parse(Buffer.from(response.result).toString('utf8'))).toBe('slept');
  await env.waitForRunGone('busy');
  const steps = (await env.logs('python-0', 'runtimed'))
    .filter((l) => l.runUID === uid && (typeof l.step === 'string' || typeof l.inFlight === 'number'))
    .map((l) => l.step ?? 'waiting');
  expect(steps[0]).toBe('waiting');
  expect(steps.filter((s) => s !== 'waiting')).toEqual(['unregistered', 'workspace-removed', 'finalizer-removed']);
});
