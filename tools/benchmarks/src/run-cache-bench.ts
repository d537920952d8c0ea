/**
 * What one cached Run costs each controller process, on the real control plane:
 * N Runs (default 5,000) in one namespace, as a queue looks: half Pending with a resolved
 * snapshot and a waiting reason, half Succeeded with outputs, each with a 1.5 KiB inline
 * program, env and args. Then, in this process (node --expose-gc), one InformerFactory per
 * projection lists and watches them: the live heap after a full GC, before and after the
 * cache is filled, divided by N. Each projection is measured in a process of its own (this
 * file again, `--measure`), so that no cache of another one, freed late, is in its figure.
 * `none` is the cache before projections (all but managedFields); the others are what the
 * scheduler, stale recovery, the controller-manager and runtimed keep (runtimed as one Pod
 * none of these Runs is assigned to: what every Runtime Pod pays for its Runtime's
 * queue and for the Runs of its peers; a Run of its own is kept whole). Prints one line per
 * projection; no timing is asserted. KRT_RUN_CACHE_KIND=pending or finished makes every Run
 * of that kind instead of half and half: what a queued and a finished Run cost apart.
 *
 *   node --expose-gc tools/benchmarks/src/run-cache-bench.ts [runs]
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunStatus } from '@kruntimes/api';
import { InformerFactory } from '@kruntimes/controller-runtime';
import type { ControllerLogger, Projection } from '@kruntimes/controller-runtime';
import { MANAGER_RUN_PROJECTION } from '@kruntimes/controller-manager-core';
import { runClient } from '@kruntimes/run-client';
import { SCHEDULER_RUN_PROJECTION } from '@kruntimes/scheduler-core';
import { runtimedRunProjection } from '@kruntimes/runtimed-core';
import { RECOVERY_RUN_PROJECTION } from '@kruntimes/stale-recovery-core';
import { forEachLimited } from '@kruntimes/host';
import { ADMIN_USER, Cluster, ControlPlane, REPO_ROOT, kubeconfigYaml } from '@kruntimes/testing';

const MEASURE = process.argv[2] === '--measure';
const RUNS = Number((MEASURE ? process.argv[5] : process.argv[2]) ?? 5000);
const CONCURRENCY = 16;
/** Which Runs: half Pending and half Succeeded (default), or all of one kind. */
const KIND = process.env.KRT_RUN_CACHE_KIND ?? 'both';
if (!['both', 'pending', 'finished'].includes(KIND)) throw new Error('KRT_RUN_CACHE_KIND is both, pending or finished');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const collect: () => void = gc;
const errors: string[] = [];
const logger: ControllerLogger = {
  error: (object, message) => errors.push(`${message} ${JSON.stringify(object)}`),
  debug: () => undefined,
};
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** A program of about 1.5 KiB, different per Run (no string is shared between Runs). */
function program(i: number): string {
  const lines = [`# run ${String(i)}`, 'import json, sys'];
  for (let line = 0; lines.join('\n').length < 1500; line += 1)
    lines.push(`value_${String(line)} = compute(${String(i * 100 + line)})  # step`);
  return lines.join('\n');
}

function newRun(namespace: string, i: number): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: `run-${String(i).padStart(6, '0')}`, namespace, labels: { team: 'data', batch: `b${String(i % 10)}` } },
    spec: {
      runtime: 'python',
      source: { inline: program(i) },
      mode: { task: { args: ['--input', `s3://bucket/input-${String(i)}.csv`, '--verbose'] } },
      env: [
        { name: 'STAGE', value: 'production' },
        { name: 'REQUEST_ID', value: `req-${String(i)}` },
      ],
      timeout: '10m',
      retryPolicy: { maxAttempts: 3, retrySafe: true },
      ttlSecondsAfterFinished: 86_400,
    },
  };
}

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:00:05Z';
const T2 = '2026-01-01T00:00:30Z';

function statusOf(i: number, generation: number | undefined): RunStatus {
  const source = { digest: `sha256:${i.toString(16).padStart(64, '0')}`, size: 1500 };
  const snapshot = {
    type: 'SourceResolved',
    status: 'True',
    reason: 'SourceResolved',
    message: 'the execution snapshot is the inline source',
    lastTransitionTime: T0,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  } as const;
  if (KIND === 'pending' || (KIND === 'both' && i % 2 === 0)) {
    const message = 'Runtime python has no free slot: 4 of 4 Pods are full (8 of 8 Runs)';
    return {
      phase: 'Pending',
      mode: 'task',
      attempt: 1,
      reason: 'NoCapacity',
      message,
      source,
      conditions: [snapshot, { type: 'Ready', status: 'False', reason: 'NoCapacity', message, lastTransitionTime: T0 }],
    };
  }
  const outputs: Record<string, string> = {};
  for (let key = 0; key < 8; key += 1) outputs[`metric_${String(key)}`] = `${String(i * key)}.${String(key)}e-3 rows processed ok`;
  return {
    phase: 'Succeeded',
    mode: 'task',
    attempt: 1,
    assignedPod: `python-7d9f8c6b5-${String(i % 97).padStart(5, 'x')}`,
    assignedPodUID: `0b5c6f3e-1a2b-4c3d-8e9f-${String(i).padStart(12, '0')}`,
    startTime: T1,
    completionTime: T2,
    reason: 'Completed',
    message: 'the task exited 0',
    exitCode: 0,
    outputs,
    source,
    conditions: [snapshot, { type: 'Ready', status: 'False', reason: 'Completed', message: 'the task exited 0', lastTransitionTime: T2 }],
  };
}

function liveHeap(): number {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

const PROJECTIONS: Record<string, Projection | undefined> = {
  none: undefined,
  scheduler: SCHEDULER_RUN_PROJECTION,
  'stale-recovery': RECOVERY_RUN_PROJECTION,
  'controller-manager': MANAGER_RUN_PROJECTION,
  // No Run here is assigned to this Pod UID (statusOf's are 0b5c6f3e-...).
  runtimed: runtimedRunProjection('bench-runtimed-pod'),
};

/** One Run cache filled in this process: what its Runs add to the live heap, in bytes. */
async function measure(kubeconfigPath: string, namespace: string, name: string): Promise<number> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const fill = async (where: string, projection: Projection | undefined): Promise<{ informers: InformerFactory; count: number }> => {
    const informers = new InformerFactory({ kubeConfig, logger });
    const informer = informers.informer({
      group: API_GROUP,
      version: API_VERSION,
      plural: RUN_PLURAL,
      namespace: where,
      ...(projection === undefined ? {} : { projection }),
    });
    await informers.start();
    return { informers, count: informer.list().length };
  };
  // A first list of one Run loads and warms every module and connection, so none is counted.
  const warm = await fill(namespace, {
    name: 'warm-up',
    keep: () => ({ metadata: { name: 'w', namespace } }),
  });
  await warm.informers.stop();
  const before = liveHeap();
  const { informers, count } = await fill(namespace, PROJECTIONS[name]);
  const after = liveHeap();
  await informers.stop();
  if (count !== RUNS) throw new Error(`${name}: the cache holds ${String(count)} Runs, not ${String(RUNS)}`);
  if (errors.length > 0) throw new Error(`informer errors:\n${errors.join('\n')}`);
  return after - before;
}

if (MEASURE) {
  const [, , , kubeconfigPath = '', namespace = '', , name = 'none'] = process.argv;
  process.stdout.write(`${JSON.stringify({ bytes: await measure(kubeconfigPath, namespace, name) })}\n`);
} else {
  await bench();
}

async function bench(): Promise<void> {
  const controlPlane = await ControlPlane.start({
    crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')],
    controllerManager: false,
  });
  const stateDir = await mkdtemp(join(tmpdir(), 'run-cache-bench-'));
  try {
    const cluster = new Cluster(controlPlane.info);
    const admin = cluster.kubeConfig();
    const runs = runClient(admin);
    const namespace = (await cluster.createNamespace({ prefix: 'run-cache' })).name;
    const started = Date.now();
    await forEachLimited(
      Array.from({ length: RUNS }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        const created = await runs.create(namespace, newRun(namespace, i));
        if (!created.ok) throw new Error(`create refused: ${created.reason}`);
        const written = await runs.replaceStatus(created.object, statusOf(i, created.object.metadata.generation));
        if (!written.ok) throw new Error(`status refused: ${written.reason}`);
      },
    );
    log(
      `${String(RUNS)} Runs (${KIND === 'both' ? 'half Pending, half Succeeded' : `all ${KIND}`}) created with status in ${String(Math.round((Date.now() - started) / 1000))} s`,
    );
    const sample = await runs.get(namespace, 'run-000001');
    log(`one Run (run-000001) as JSON: ${String(JSON.stringify(sample).length)} bytes`);

    const kubeconfigPath = join(stateDir, 'admin.kubeconfig');
    const yaml = kubeconfigYaml({
      server: controlPlane.info.server,
      caPem: controlPlane.info.caPem,
      user: ADMIN_USER,
      token: cluster.user(ADMIN_USER).token,
    });
    await writeFile(kubeconfigPath, yaml, { mode: 0o600 });
    const self = import.meta.filename;
    const names = Object.keys(PROJECTIONS);
    for (const round of [1, 2]) {
      for (const name of names) {
        const args = ['--expose-gc', self, '--measure', kubeconfigPath, namespace, String(RUNS), name];
        const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 1 << 20 });
        const { bytes } = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { bytes: number };
        log(
          `round ${String(round)} ${name.padEnd(20)} live heap +${(bytes / 1024 / 1024).toFixed(1)} MiB for ${String(RUNS)} Runs: ${(bytes / RUNS / 1024).toFixed(2)} KiB/Run`,
        );
      }
    }
  } finally {
    await controlPlane.stop();
    await rm(stateDir, { recursive: true, force: true });
  }
}
