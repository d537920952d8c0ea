/**
 * Benchmark (not a test) of runtimed's own lifecycle latency on a real control plane,
 * with runtimed and the Runtime Servers as real processes in local-node Pods:
 *   node tools/benchmarks/src/lifecycle-bench.ts [runs=20] [warmup=3]
 *
 * One warm Pod per language; the bench binds each Run itself (as the scheduler would)
 * and measures, one Run at a time, after `warmup` Runs of each kind that are not counted:
 * - bind -> Ready of a Python function Run (claim, finalizer, workspace, RegisterFunction
 *   with a warm interpreter start, Ready write), split into bind -> Running -> Ready;
 *   then cancel -> Cancelled;
 * - bind -> Succeeded of a Python task Run `print(1)`;
 * - bind -> Succeeded of a Bash task Run that exits 0 at once.
 * Every latency is on this process's clock, from the return of the bind (or cancel)
 * write to the watch event that first shows the phase: no polling.
 */
import { join } from 'node:path';
import type { RunSpec } from '@kruntimes/api';
import type { V1Pod } from '@kubernetes/client-node';
import { Cluster, ControlPlane, REPO_ROOT, RunPhaseWatch, formatLatencies, summarizeLatencies } from '@kruntimes/testing';
// runtimed's own test environment (Runtime Pods on the local node, the test playing the scheduler),
// shared with its integration tests rather than moved out of them.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { RuntimeEnvironment } from '../../../apps/runtimed/test/runtime-pods.ts';

const RUNS = Number(process.argv[2] ?? 20);
const WARMUP = Number(process.argv[3] ?? 3);

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let env: RuntimeEnvironment | undefined;
let watch: RunPhaseWatch | undefined;
try {
  env = await RuntimeEnvironment.start('bench-runtimed', new Cluster(controlPlane.info));
  const python = await env.createRuntimePod('python-0', 'python');
  const bash = await env.createRuntimePod('bash-0', 'bash');
  const current = env;
  const runs = await RunPhaseWatch.start(env.admin, env.name);
  watch = runs;

  /** `warmup` uncounted Runs, then `RUNS` measured ones, one at a time. */
  const measure = async <T>(prefix: string, one: (name: string) => Promise<T>): Promise<T[]> => {
    const samples: T[] = [];
    for (let i = 0; i < WARMUP + RUNS; i += 1) {
      const sample = await one(`${prefix}-${String(i).padStart(3, '0')}`);
      if (i >= WARMUP) samples.push(sample);
    }
    return samples;
  };
  /** Creates the Run, binds it to `pod` and returns the instant the bind write returned. */
  const createAndBind = async (name: string, spec: RunSpec, pod: V1Pod): Promise<number> => {
    await current.createRun(name, spec);
    await runs.untilSeen(name, 'Pending');
    await current.bind(name, pod);
    return performance.now();
  };
  const seen = (name: string, phase: string): number => runs.seenAt(name, phase) ?? Number.NaN;

  const functions = await measure('fn', async (name) => {
    const bound = await createAndBind(
      name,
      {
        runtime: 'rt',
        source: { inline: 'def handle(event, context):\n    return event\n' },
        mode: { function: { handler: 'main:handle' } },
      },
      python,
    );
    await runs.untilSeen(name, 'Ready');
    await current.patchRunSpec(name, { cancelRequested: true });
    const cancelWritten = performance.now();
    await runs.untilSeen(name, 'Cancelled');
    return {
      ready: seen(name, 'Ready') - bound,
      running: seen(name, 'Running') - bound,
      runningToReady: seen(name, 'Ready') - seen(name, 'Running'),
      cancelled: seen(name, 'Cancelled') - cancelWritten,
    };
  });
  const task = (inline: string, pod: V1Pod) => async (name: string) => {
    const bound = await createAndBind(name, { runtime: 'rt', source: { inline }, mode: { task: {} } }, pod);
    await runs.untilSeen(name, 'Succeeded');
    return { succeeded: seen(name, 'Succeeded') - bound, running: seen(name, 'Running') - bound };
  };
  const pythonTasks = await measure('py-task', task('print(1)\n', python));
  const bashTasks = await measure('sh-task', task('exit 0\n', bash));

  const line = (label: string, samples: number[]): void => {
    process.stdout.write(`${label}: ${formatLatencies(summarizeLatencies(samples), 1)}\n`);
  };
  process.stdout.write(
    `${RUNS} measured Runs of each kind, one at a time, after ${WARMUP} uncounted ones; from the bind write's return:\n`,
  );
  line(
    'bind -> Ready, Python function',
    functions.map((s) => s.ready),
  );
  line(
    '  bind -> Running (claim)',
    functions.map((s) => s.running),
  );
  line(
    '  Running -> Ready (finalizer, workspace, RegisterFunction, Ready write)',
    functions.map((s) => s.runningToReady),
  );
  line(
    'cancel write -> Cancelled, Python function',
    functions.map((s) => s.cancelled),
  );
  line(
    'bind -> Succeeded, Python task print(1)',
    pythonTasks.map((s) => s.succeeded),
  );
  line(
    '  bind -> Running (claim)',
    pythonTasks.map((s) => s.running),
  );
  line(
    'bind -> Succeeded, Bash task exit 0',
    bashTasks.map((s) => s.succeeded),
  );
  line(
    '  bind -> Running (claim)',
    bashTasks.map((s) => s.running),
  );
  if (runs.restarts > 0) process.stdout.write(`the watch was resumed ${String(runs.restarts)} times (times in the gaps are late)\n`);
  if (runs.errors.length > 0) process.stdout.write(`watch errors: ${runs.errors.join('; ')}\n`);
} finally {
  watch?.stop();
  await env?.stop();
  await controlPlane.stop();
}
