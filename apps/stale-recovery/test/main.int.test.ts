import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoordinationV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunSpec } from '@kruntimes/api';
import { currentPhase, transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { STALE_RECOVERY_LEASE_NAME, STALE_RECOVERY_RULES } from '@kruntimes/stale-recovery-core';
import { Cluster, NamespaceAccess, REPO_ROOT, freePorts, kubeconfigYaml, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';

/**
 * stale-recovery as deployed (main.ts as its own process, its ServiceAccount holding exactly
 * STALE_RECOVERY_RULES): it takes its leader Lease, recovers Runs whose owner Pod UID
 * never existed (a Pod lost while nobody watched), serves its metrics, and stops cleanly
 * on SIGTERM. No Runtime Pods are needed: a missing Pod UID is the strongest proof.
 */
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };
const GHOST = { pod: 'ghost-0', podUID: randomUUID() };

let namespace: TestNamespace;
let dir: string;
let child: ChildProcess | undefined;

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'stale-recovery-main', waitForDefaultServiceAccount: true });
  dir = await mkdtemp(join(tmpdir(), 'stale-recovery-main-'));
});

afterAll(async () => {
  if (child?.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  await namespace.delete();
  await rm(dir, { recursive: true, force: true });
});

async function getRun(name: string): Promise<Run | undefined> {
  try {
    return (await objects.getNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: namespace.name,
      plural: RUN_PLURAL,
      name,
    })) as Run;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

async function act(name: string, writer: WriterRole, event: RunEvent): Promise<void> {
  const run = await getRun(name);
  if (run === undefined) throw new Error(`no Run ${name}`);
  const result = transition({ run, event, writer, now: new Date().toISOString() });
  if (!result.ok) throw result.error;
  await objects.replaceNamespacedCustomObjectStatus({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    name,
    body: { ...run, status: result.status },
  });
}

/** A Run bound to and claimed by the owner of a Pod UID that does not exist. */
async function claimedByGhost(name: string, spec: Partial<RunSpec>, finalizers: string[] = []): Promise<void> {
  await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'Run',
      metadata: { name, finalizers },
      spec: { runtime: 'gone', source: { inline: 'x' }, mode: { task: {} }, ...spec },
    },
  });
  await act(name, 'scheduler', { type: 'Bind', ...GHOST });
  await act(name, 'runtimed', { type: 'Claim' });
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test('main.ts: leads with its own Lease, recovers Runs of a vanished Pod, serves metrics (refusing credentials), stops on SIGTERM', async () => {
  const fn: Partial<RunSpec> = { mode: { function: { handler: 'main:handle' } } };
  await claimedByGhost('lost-fn', fn, [REGISTRATION_CLEANUP_FINALIZER]);
  await claimedByGhost('lost-task', {});
  await claimedByGhost('deleted-fn', fn, [REGISTRATION_CLEANUP_FINALIZER]);
  await objects.deleteNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    name: 'deleted-fn',
  });

  const kubeconfig = join(dir, 'stale-recovery.kubeconfig');
  const token = await new NamespaceAccess(cluster, namespace.name).serviceAccountToken('stale-recovery', STALE_RECOVERY_RULES);
  await writeFile(kubeconfig, kubeconfigYaml({ server: cluster.info.server, caPem: cluster.info.caPem, user: 'stale-recovery', token }), {
    mode: 0o600,
  });
  const [port] = await freePorts(1);
  const logFile = join(dir, 'stale-recovery.log');
  const log = createWriteStream(logFile);
  const process_ = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'apps/stale-recovery/src/main.ts'),
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      namespace.name,
      '--lease-namespace',
      namespace.name,
      '--lease-duration-seconds',
      '3',
      '--renew-deadline-seconds',
      '2',
      '--retry-period-seconds',
      '0.5',
      '--metrics-address',
      `127.0.0.1:${String(port)}`,
    ],
    { env: { ...process.env, POD_NAME: 'stale-recovery-0' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child = process_;
  process_.stdout.pipe(log);
  process_.stderr.pipe(log);

  await waitFor(
    'the leader Lease held by the process',
    async () => {
      try {
        const lease = await admin
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace: namespace.name, name: STALE_RECOVERY_LEASE_NAME });
        return lease.spec?.holderIdentity?.startsWith('stale-recovery-0_') === true ? true : undefined;
      } catch {
        return undefined;
      }
    },
    WAIT,
  );

  // A function is always retried; a task that is not retrySafe cannot be; a deleted function's finalizer goes.
  const requeued = await waitFor(
    'lost-fn requeued',
    async () => {
      const run = await getRun('lost-fn');
      return run !== undefined && currentPhase(run) === 'Pending' && run.status?.attempt === 2 ? run : undefined;
    },
    WAIT,
  );
  expect(requeued.status).toMatchObject({ reason: 'RetryBackoff' });
  expect(requeued.status?.assignedPodUID).toBeUndefined();
  const interrupted = await waitFor(
    'lost-task Interrupted',
    async () => {
      const run = await getRun('lost-task');
      return run !== undefined && currentPhase(run) === 'Interrupted' ? run : undefined;
    },
    WAIT,
  );
  expect(interrupted.status).toMatchObject({ reason: 'OwnerLost', attempt: 1 });
  await waitFor('deleted-fn gone (finalizer removed)', async () => ((await getRun('deleted-fn')) === undefined ? true : undefined), WAIT);

  const metrics = await get(`http://127.0.0.1:${String(port)}/metrics`);
  expect(metrics.status).toBe(200);
  expect(metrics.body).toContain('kruntimes_recoveries_total{cause="podGone",outcome="requeued"} 1');
  expect(metrics.body).toContain('kruntimes_recoveries_total{cause="podGone",outcome="interrupted"} 1');
  expect(metrics.body).toContain('kruntimes_recoveries_total{cause="podGone",outcome="finalizerRemoved"} 1');
  expect(metrics.body).toMatch(/kruntimes_recovery_fence_wait_seconds_count [1-9]/);
  expect(metrics.body).toContain('# TYPE kruntimes_recovery_status_write_conflicts_total counter');
  expect((await get(`http://127.0.0.1:${String(port)}/metrics`, { authorization: 'Bearer x' })).status).toBe(400);

  const exited = new Promise<number | null>((resolve) =>
    process_.once('exit', (code) => {
      resolve(code);
    }),
  );
  process_.kill('SIGTERM');
  expect(await exited).toBe(0);
  const lines = (await readFile(logFile, 'utf8'))
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
  expect(lines.filter((line) => line.level >= 50)).toEqual([]);
}, 180_000);
