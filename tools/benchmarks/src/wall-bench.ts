/**
 * Benchmark (not a test) of the wall around each Run, on real Runtime Server
 * processes (root: the walled server switches to the Runs' uids):
 *   node tools/benchmarks/src/wall-bench.ts [samples=200]
 * Per language, two servers side by side, one with KRT_RUN_UIDS (walled) and one without
 * (open), each in a PID namespace (and /proc) of its own as in a container, so that the
 * walled server's /proc scans see its own processes rather than the machine's (profiled:
 * on the host's ~80 processes the scan after each invocation was 0.66 of its 1.2 ms cost),
 * measured in alternating turns of 20 so both see the same machine:
 * - task: Execute of a task that exits at once, call to its `exited` event;
 * - invoke: InvokeFunction of a registered function that returns its payload, back to back
 *   (each call sent as the last one returns) and spaced (10 ms apart, as a function serving
 *   traffic sees them);
 * - reclaim: what a walled Run's end adds before its uid is free again (killAllOf, in this
 *   process): with nothing of the uid left (the usual case), and with a setsid child left behind.
 * - gateway (wall-gateway.ts): the invoke as a caller sees it, HTTPS through the gateway and
 *   runtimed to the Runtime Server, on two systems on one control plane (Pods with a uid per Run
 *   in user namespaces, and Pods whose Runs share a user), in alternating turns.
 * KRT_WALL_SECTIONS=servers,gateway (the default: both) chooses what is measured.
 * Floors: invoke p50 walled within 5 % of open, task p50 within 20 ms.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { durationFromMillis } from '@kruntimes/proto';
import {
  Cluster,
  ControlPlane,
  REPO_ROOT,
  executeToEnd,
  executionRequest,
  formatLatencies,
  startServerProcess,
  summarizeLatencies,
} from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';
import { killAllOf } from '@kruntimes/runtime-server-core';
import { measureWallThroughGateway } from './wall-gateway.ts';

const SAMPLES = Number(process.argv[2] ?? 200);
const TURN = 20;
const SECTIONS = new Set((process.env.KRT_WALL_SECTIONS ?? 'servers,gateway').split(','));
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const LANGUAGES = {
  bash: { main: 'apps/runtime-server-bash/src/main.ts', task: 'task.sh', handler: 'handle' },
  python: { main: 'apps/runtime-server-python/src/main.ts', task: 'task.py', handler: 'main:handle' },
} as const;

if (process.getuid?.() !== 0) {
  log('wall-bench needs root (the walled Runtime Server switches to the Runs uids)');
  process.exit(2);
}

const tmp = await mkdtemp(join(tmpdir(), 'wall-bench-'));
await chmod(tmp, 0o711);
const workdir = join(tmp, 'work');
await mkdir(workdir);
await writeFile(join(workdir, 'task.sh'), 'exit 0\n');
await writeFile(join(workdir, 'task.py'), 'pass\n');
await writeFile(join(workdir, 'main.sh'), 'handle() { cat; }\n');
await writeFile(join(workdir, 'main.py'), 'def handle(payload, context):\n    return payload\n');

interface Side {
  readonly server: ServerProcess;
  readonly registrationId: string;
  readonly task: number[];
  readonly invoke: number[];
  readonly invokeSpaced: number[];
}

async function side(language: keyof typeof LANGUAGES, walled: boolean): Promise<Side> {
  const spec = LANGUAGES[language];
  const server = await startServerProcess(
    join(REPO_ROOT, spec.main),
    {
      TMPDIR: tmp,
      // An interpreter the Runs' users can reach (a version manager's under /root is not).
      ...(language === 'python' ? { KRT_PYTHON: '/usr/bin/python3' } : {}),
      ...(walled ? { KRT_RUN_UIDS: language === 'bash' ? '3900000-3900099' : '3900100-3900199' } : {}),
    },
    undefined,
    // As in a Pod: a PID namespace of its own; a walled one through the images' entry (hidden /proc).
    walled ? { throughWallEntry: true } : { ownPidNamespace: true },
  );
  const { registrationId } = await server.client.registerFunction({
    runUid: randomUUID(),
    attempt: 1,
    workdir,
    handler: spec.handler,
    env: {},
  });
  return { server, registrationId, task: [], invoke: [], invokeSpaced: [] };
}

async function turn(language: keyof typeof LANGUAGES, target: Side): Promise<void> {
  for (let i = 0; i < TURN; i++) {
    const started = performance.now();
    const transcript = await executeToEnd(target.server.client, executionRequest({ workdir, entrypoint: LANGUAGES[language].task }));
    if (transcript.exited?.exitCode !== 0) throw new Error(`task failed: ${JSON.stringify(transcript.exited)}`);
    target.task.push(performance.now() - started);
  }
  for (let i = 0; i < TURN; i++) target.invoke.push(await timedInvoke(target));
  for (let i = 0; i < TURN; i++) {
    await new Promise((resolve) => setTimeout(resolve, SPACING_MS));
    target.invokeSpaced.push(await timedInvoke(target));
  }
}

const SPACING_MS = 10;

async function timedInvoke(target: Side): Promise<number> {
  const started = performance.now();
  await target.server.client.invokeFunction({
    registrationId: target.registrationId,
    invocationId: randomUUID(),
    payload: Buffer.from('{"n":1}'),
    timeout: durationFromMillis(30_000),
  });
  return performance.now() - started;
}

async function reclaim(): Promise<{ idle: number[]; survivor: number[] }> {
  const identity = { uid: 3_900_500, gid: 3_900_500 };
  const idle: number[] = [];
  const survivor: number[] = [];
  for (let i = 0; i < 50; i++) {
    let started = performance.now();
    await killAllOf(identity, 5_000);
    idle.push(performance.now() - started);
    const child = spawn('/bin/sh', ['-c', 'setsid sleep 300 </dev/null >/dev/null 2>&1 & exit 0'], { ...identity, stdio: 'ignore' });
    await new Promise((resolve) => child.once('exit', resolve));
    started = performance.now();
    if (!(await killAllOf(identity, 5_000))) throw new Error('a setsid survivor outlived killAllOf');
    survivor.push(performance.now() - started);
  }
  return { idle, survivor };
}

function reportInvoke(label: string, open: number[], walled: number[]): void {
  const [invokeOpen, invokeWalled] = [summarizeLatencies(open), summarizeLatencies(walled)];
  log(`${label} open:   ${formatLatencies(invokeOpen)}`);
  log(`${label} walled: ${formatLatencies(invokeWalled)}`);
  const ratio = invokeWalled.p50 / invokeOpen.p50;
  log(`${label} p50 walled / open: ${ratio.toFixed(3)} (floor: at most 1.05) ${ratio <= 1.05 ? 'ok' : 'OVER'}`);
}

async function measureServers(): Promise<void> {
  for (const language of ['bash', 'python'] as const) {
    const open = await side(language, false);
    const walled = await side(language, true);
    try {
      // Warm both (module loads, first spawns) before measuring.
      await turn(language, open);
      await turn(language, walled);
      for (const measured of [open, walled]) measured.task.length = measured.invoke.length = measured.invokeSpaced.length = 0;
      for (let done = 0; done < SAMPLES; done += TURN) {
        await turn(language, open);
        await turn(language, walled);
      }
    } finally {
      await open.server.stop();
      await walled.server.stop();
    }
    const [taskOpen, taskWalled] = [summarizeLatencies(open.task), summarizeLatencies(walled.task)];
    log(`${language} task   open:   ${formatLatencies(taskOpen)}`);
    log(`${language} task   walled: ${formatLatencies(taskWalled)}`);
    log(
      `${language} task   p50 walled - open: ${(taskWalled.p50 - taskOpen.p50).toFixed(2)} ms (floor: within 20 ms) ${taskWalled.p50 - taskOpen.p50 <= 20 ? 'ok' : 'OVER'}`,
    );
    reportInvoke(`${language} invoke`, open.invoke, walled.invoke);
    reportInvoke(`${language} invoke spaced`, open.invokeSpaced, walled.invokeSpaced);
  }
  const { idle, survivor } = await reclaim();
  log(`uid reclaim, nothing left:       ${formatLatencies(summarizeLatencies(idle))}`);
  log(`uid reclaim, one setsid survivor: ${formatLatencies(summarizeLatencies(survivor))}`);
}

async function measureGateway(): Promise<void> {
  const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
  try {
    for (const line of await measureWallThroughGateway(new Cluster(controlPlane.info), SAMPLES, TURN)) log(line);
  } finally {
    await controlPlane.stop();
  }
}

try {
  if (SECTIONS.has('servers')) await measureServers();
  if (SECTIONS.has('gateway')) await measureGateway();
} finally {
  await rm(tmp, { recursive: true, force: true });
}
