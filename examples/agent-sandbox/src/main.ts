// The agent sandbox demo: an agent loop whose plan of tool calls is fixed (no model is
// needed to show the platform), run against `npm run dev`'s cluster. See ../README.md.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP_VERSION } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { kruntimesClients } from '@kruntimes/run-client';
import type { ObjectClient } from '@kruntimes/run-client';
import { capacityHold } from '@kruntimes/run-state';
import { Sandbox } from '@kruntimes/sdk';

const NAMESPACE = 'demo';
const RUNTIME = 'agent-sandbox';
const REPLICAS = 2;
const RUNTIME_READY_TIMEOUT_MS = 180_000;

const started = performance.now();
function log(line: string): void {
  const elapsed = ((performance.now() - started) / 1000).toFixed(3).padStart(7);
  process.stdout.write(`${new Date().toISOString()} +${elapsed}s  ${line}\n`);
}
const ms = (value: number): string => `${value.toFixed(1)} ms`;

/** The fixed plan: what a model would decide, step by step. */
const PLAN: { describe: string; call: (sandbox: Sandbox) => Promise<string> }[] = [
  {
    describe: 'write_file data/measurements.csv',
    call: async (sandbox) => {
      const rows = ['city,celsius', 'Oslo,4.5', 'Lisbon,17.2', 'Cairo,28.9', 'Reykjavik,1.3', 'Singapore,31.0'];
      const written = await sandbox.writeFile('data/measurements.csv', `${rows.join('\n')}\n`);
      return `${String(written.bytes)} bytes`;
    },
  },
  {
    describe: 'exec python: read the data, write result/summary.json',
    call: async (sandbox) => {
      const ran = await sandbox.execPython(
        [
          'import csv, json, os',
          'rows = list(csv.DictReader(open("data/measurements.csv")))',
          'temps = [float(row["celsius"]) for row in rows]',
          'os.makedirs("result", exist_ok=True)',
          'summary = {"cities": len(rows), "mean": round(sum(temps) / len(temps), 2),',
          '           "warmest": max(rows, key=lambda row: float(row["celsius"]))["city"]}',
          'json.dump(summary, open("result/summary.json", "w"))',
          'print("wrote result/summary.json for", len(rows), "cities")',
        ].join('\n'),
      );
      return `exit ${String(ran.exitCode)}, stdout ${JSON.stringify(ran.stdout)}`;
    },
  },
  {
    describe: 'read_file result/summary.json',
    call: async (sandbox) => (await sandbox.readFile('result/summary.json')).content,
  },
  {
    describe: 'list_files .',
    call: async (sandbox) =>
      (await sandbox.listFiles('.')).entries.map((entry) => `${entry.name}${entry.type === 'dir' ? '/' : ''}`).join(' '),
  },
];

interface Dev {
  kubeConfig: KubeConfig;
  apiServer: string;
  gatewayUrl: string;
}

/** `npm run dev`'s state: the admin kubeconfig and the gateway (the Runs' endpoints name it). */
async function devCluster(): Promise<Dev> {
  const dir = process.env.KRT_DEV_DIR ?? join(dirname(dirname(dirname(import.meta.dirname))), 'tmp', 'dev');
  let state: { phase?: string; kubeconfig?: string; apiServer?: string; gatewayUrl?: string };
  try {
    state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as typeof state;
  } catch (error) {
    throw new Error(`no local cluster in ${dir} (start one with npm run dev, or set KRT_DEV_DIR)`, { cause: error });
  }
  if (state.phase !== 'ready' || state.kubeconfig === undefined)
    throw new Error(`the local cluster in ${dir} is ${state.phase ?? 'unknown'}, not ready`);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(state.kubeconfig);
  return { kubeConfig, apiServer: state.apiServer ?? '', gatewayUrl: state.gatewayUrl ?? '' };
}

/** The demo's Runtime: an exclusive sandbox per Pod (runs: 1), two Pods. */
async function ensureRuntime(runtimes: ObjectClient<Runtime>): Promise<void> {
  const body: Runtime = {
    apiVersion: API_GROUP_VERSION,
    kind: 'Runtime',
    metadata: { name: RUNTIME },
    spec: { language: 'python', replicas: REPLICAS, runs: 1 },
  };
  const created = await runtimes.create(NAMESPACE, body);
  if (created.ok) log(`Runtime ${NAMESPACE}/${RUNTIME} created: python, replicas ${String(REPLICAS)}, runs 1`);
  else log(`Runtime ${NAMESPACE}/${RUNTIME} exists`);
  const deadline = Date.now() + RUNTIME_READY_TIMEOUT_MS;
  for (;;) {
    const runtime = await runtimes.get(NAMESPACE, RUNTIME);
    if (runtime === undefined) throw new Error(`Runtime ${NAMESPACE}/${RUNTIME} was deleted`);
    if ((runtime.status?.readyPods ?? 0) >= REPLICAS) break;
    if (Date.now() > deadline)
      throw new Error(
        `Runtime ${RUNTIME} has ${String(runtime.status?.readyPods ?? 0)} ready Pods after ${String(RUNTIME_READY_TIMEOUT_MS)} ms`,
      );
    await sleep(250);
  }
  log(`Runtime ${NAMESPACE}/${RUNTIME}: ${String(REPLICAS)} Pods ready`);
}

/** Runs holding a unit of the Pod's capacity (run-state's one count, as the scheduler counts). */
async function unitsHeld(runs: ObjectClient<Run>, podUID: string): Promise<string[]> {
  return (await runs.list(NAMESPACE)).filter((run) => capacityHold(run)?.podUID === podUID).map((run) => run.metadata.name ?? '');
}

async function startSandbox(dev: Dev, label: string): Promise<{ sandbox: Sandbox; readyMs: number }> {
  const sandbox = new Sandbox({ kubeConfig: dev.kubeConfig, namespace: NAMESPACE, runtime: RUNTIME, exclusive: true });
  const before = performance.now();
  log(`${label}: creating a sandbox Run (generateName sandbox-, idle timeout 600 s) on ${RUNTIME}`);
  await sandbox.start();
  const readyMs = performance.now() - before;
  log(`${label}: ${sandbox.name ?? ''} Ready on Pod ${sandbox.run?.status?.assignedPod ?? '?'}: create -> Ready ${ms(readyMs)}`);
  return { sandbox, readyMs };
}

async function main(): Promise<void> {
  const dev = await devCluster();
  log(`local cluster: API ${dev.apiServer}, gateway ${dev.gatewayUrl}`);
  const clients = kruntimesClients(dev.kubeConfig);
  await ensureRuntime(clients.runtimes);

  const { sandbox } = await startSandbox(dev, 'agent');
  // Another agent's sandbox, started while this one works: runs: 1 puts it on the other Pod.
  const second = startSandbox(dev, 'second agent');
  try {
    const where = await sandbox.exec('pwd');
    const workspace = where.stdout.trim();
    log(`agent: workspace ${workspace} (on this machine: dev's Runtime Pods are local processes)`);
    for (const [index, step] of PLAN.entries()) {
      const before = performance.now();
      const outcome = await step.call(sandbox);
      log(`agent: tool ${String(index + 1)}/${String(PLAN.length)} ${step.describe}: ${outcome} (${ms(performance.now() - before)})`);
    }

    const other = (await second).sandbox;
    try {
      const [mine, theirs] = [sandbox.run?.status?.assignedPod, other.run?.status?.assignedPod];
      log(`second agent: on Pod ${theirs ?? '?'}, ${mine !== theirs ? 'another Pod than' : 'THE SAME Pod as'} the first (${mine ?? '?'})`);
      const hello = await other.exec('ls');
      log(`second agent: its own workspace holds: ${hello.stdout.trim().split('\n').join(' ')}`);
    } finally {
      await other.close();
    }

    const podUID = sandbox.run?.status?.assignedPodUID ?? '';
    const pod = sandbox.run?.status?.assignedPod ?? '';
    const name = sandbox.name ?? '';
    log(`agent: Pod ${pod} capacity held by: ${(await unitsHeld(clients.runs, podUID)).join(', ')} (runs: 1)`);
    const closing = performance.now();
    await sandbox.close();
    log(`agent: session ended: ${name} deleted and gone (${ms(performance.now() - closing)})`);
    log(
      `agent: workspace ${workspace} ${existsSync(workspace) ? 'STILL EXISTS' : 'is gone'}; its Run directory ${existsSync(dirname(workspace)) ? 'STILL EXISTS' : 'is gone'}`,
    );
    const held = await unitsHeld(clients.runs, podUID);
    log(`agent: Pod ${pod} capacity: ${held.length === 0 ? 'free again (no Run holds a unit)' : `STILL HELD by ${held.join(', ')}`}`);
    if (existsSync(workspace) || held.length > 0) process.exitCode = 1;
  } catch (error) {
    await sandbox.close();
    await (await second.catch(() => undefined))?.sandbox.close();
    throw error;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`agent-sandbox demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
