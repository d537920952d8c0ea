/**
 * Benchmark (not a test) of runtimed's own lifecycle latency on a real control plane,
 * with runtimed and the Runtime Servers as real processes in local-node Pods:
 *   node apps/runtimed/bench/lifecycle-bench.ts [runs=20]
 *
 * One warm Pod per language; the bench binds each Run itself (as the scheduler would)
 * and measures, one Run at a time:
 * - bind -> Ready of a Python function Run (claim, finalizer, workspace, RegisterFunction
 *   with a warm interpreter start, Ready write), then cancel -> Cancelled;
 * - bind -> Succeeded of a Bash task Run that exits 0 at once.
 * Latency is measured on this process's clock from the bind write's return to the first
 * watch-free poll (every 10 ms) that sees the phase, so it includes up to 10 ms of poll.
 */
import { join } from 'node:path';
import type { Run, RunPhase } from '@kruntimes/api';
import { Cluster, ControlPlane, REPO_ROOT } from '@kruntimes/testing';
import { RuntimeEnvironment } from '../test/runtime-pods.ts';

const RUNS = Number(process.argv[2] ?? 20);

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let env: RuntimeEnvironment | undefined;
try {
  env = await RuntimeEnvironment.start('bench-runtimed', new Cluster(controlPlane.info));
  const python = await env.createRuntimePod('python-0', 'python');
  const bash = await env.createRuntimePod('bash-0', 'bash');
  const current = env;

  const until = async (name: string, phase: RunPhase): Promise<Run> => {
    for (let i = 0; i < 6_000; i += 1) {
      const run = await current.getRun(name);
      if (run.status?.phase === phase) return run;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`Run ${name} never reached ${phase}`);
  };
  const measure = async (runs: number, one: (i: number) => Promise<number>): Promise<number[]> => {
    const samples: number[] = [];
    for (let i = 0; i < runs; i += 1) samples.push(await one(i));
    return samples.sort((a, b) => a - b);
  };

  const ready = await measure(RUNS, async (i) => {
    const name = `fn-${i}`;
    await current.createRun(name, {
      runtime: 'rt',
      source: { inline: 'def handle(event, context):\n    return event\n' },
      mode: { function: { handler: 'main:handle' } },
    });
    const start = performance.now();
    await current.bind(name, python);
    await until(name, 'Ready');
    const elapsed = performance.now() - start;
    await current.patchRunSpec(name, { cancelRequested: true });
    await until(name, 'Cancelled');
    return elapsed;
  });
  const tasks = await measure(RUNS, async (i) => {
    const name = `task-${i}`;
    await current.createRun(name, { runtime: 'rt', source: { inline: 'exit 0\n' }, mode: { task: {} } });
    const start = performance.now();
    await current.bind(name, bash);
    await until(name, 'Succeeded');
    return performance.now() - start;
  });

  const pct = (samples: number[], p: number): string =>
    (samples[Math.min(samples.length - 1, Math.floor((p / 100) * samples.length))] ?? Number.NaN).toFixed(0);
  process.stdout.write(
    `bind -> Ready, Python function (${RUNS} Runs): p50 ${pct(ready, 50)} ms, p90 ${pct(ready, 90)} ms, max ${pct(ready, 100)} ms\n`,
  );
  process.stdout.write(
    `bind -> Succeeded, Bash task (${RUNS} Runs): p50 ${pct(tasks, 50)} ms, p90 ${pct(tasks, 90)} ms, max ${pct(tasks, 100)} ms\n`,
  );
  process.stdout.write(`ratio Ready / Succeeded at p50: ${(Number(pct(ready, 50)) / Number(pct(tasks, 50))).toFixed(2)}\n`);
} finally {
  await env?.stop();
  await controlPlane.stop();
}
