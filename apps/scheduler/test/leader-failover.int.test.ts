import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { SCHEDULER_RULES } from '@kruntimes/scheduler-core';
import { REPO_ROOT, kubeconfigYaml, waitFor } from '@kruntimes/testing';
import { Environment, WAIT, admin, cluster, serviceAccountToken } from './environment.ts';
import type { RunObserver } from './environment.ts';

const RUNS = 200;
const LEASE = 'kruntimes-scheduler';

let env: Environment;
let observer: RunObserver | undefined;
let dir: string;
const replicas = new Map<string, ChildProcess>();

beforeEach(async () => {
  env = await Environment.start('failover');
  dir = await mkdtemp(join(tmpdir(), 'scheduler-failover-'));
});

afterEach(async () => {
  observer?.stop();
  for (const child of replicas.values()) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  }
  replicas.clear();
  await env.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A scheduler replica as its own process, exactly as deployed (main.ts), with a short Lease. */
function startReplica(name: string, kubeconfig: string): void {
  const log = createWriteStream(join(dir, `${name}.log`));
  const child = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'apps/scheduler/src/main.ts'),
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      env.name,
      '--lease-namespace',
      env.name,
      '--lease-duration-seconds',
      '3',
      '--renew-deadline-seconds',
      '2',
      '--retry-period-seconds',
      '0.5',
    ],
    { env: { ...process.env, POD_NAME: name }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  replicas.set(name, child);
}

async function leaseHolder(): Promise<string | undefined> {
  const coordination = admin.makeApiClient(CoordinationV1Api);
  try {
    const holder = (await coordination.readNamespacedLease({ namespace: env.name, name: LEASE })).spec?.holderIdentity ?? '';
    return [...replicas.keys()].find((name) => holder.startsWith(`${name}_`));
  } catch {
    return undefined;
  }
}

test(`two scheduler replicas: killing the leader in the middle of ${RUNS} Runs loses none and binds none twice`, async () => {
  // 4 Pods x 50 = exactly enough capacity for every Run.
  await env.createRuntime('burst', { replicas: 4, runs: 50 });
  await env.readyPods('burst', 4);
  // Both replicas run as the scheduler's ServiceAccount with exactly its rules (Lease included).
  const kubeconfig = join(dir, 'scheduler.kubeconfig');
  const token = await serviceAccountToken(env.name, 'scheduler', SCHEDULER_RULES);
  await writeFile(kubeconfig, kubeconfigYaml({ server: cluster.info.server, caPem: cluster.info.caPem, user: 'scheduler', token }), {
    mode: 0o600,
  });
  startReplica('scheduler-a', kubeconfig);
  startReplica('scheduler-b', kubeconfig);
  const first = await waitFor('a leader', leaseHolder, WAIT);
  observer = await env.observeRuns(50);

  let killedAt = -1;
  const watcher = observer;
  const creating = (async () => {
    for (let i = 0; i < RUNS; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => env.createRun(`run-${String(i + j).padStart(3, '0')}`, 'burst')));
      // Mid-burst: once a quarter is bound and more keeps coming, the leader dies without a word.
      if (killedAt < 0 && watcher.everAssigned.size >= RUNS / 4) {
        killedAt = watcher.everAssigned.size;
        replicas.get(first)?.kill('SIGKILL');
      }
    }
  })();
  await creating;
  if (killedAt < 0) {
    killedAt = watcher.everAssigned.size;
    replicas.get(first)?.kill('SIGKILL');
  }

  const all = await waitFor(
    `all ${RUNS} Runs bound`,
    async () => {
      const runs = await env.listRuns();
      return runs.length === RUNS && runs.every((run) => run.status?.phase === 'Scheduled') ? runs : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  const second = await leaseHolder();
  observer.stop();

  expect(killedAt).toBeLessThan(RUNS);
  expect(second).toBeDefined();
  expect(second).not.toBe(first);
  expect(all.map((run) => run.status?.attempt)).toEqual(Array.from({ length: RUNS }, () => 1));
  expect(observer.watchErrors).toEqual([]);
  expect(observer.doubleBound()).toEqual([]);
  expect(observer.overcommits).toEqual([]);
  expect(observer.everAssigned.size).toBe(RUNS);
  // The survivor did real work after the failover (its log says it started leading).
  expect(await readFile(join(dir, `${second ?? ''}.log`), 'utf8')).toContain('leading: starting the scheduler');
  process.stderr.write(`[failover] leader ${first} killed after ${killedAt} of ${RUNS} Runs were bound; ${second ?? ''} bound the rest\n`);
}, 180_000);
