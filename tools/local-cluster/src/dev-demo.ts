// The demo of `dev up`: a Python and a Bash function Run, invoked through the gateway as a non-admin ServiceAccount.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, CHECKPOINT_CAPABILITY, RUN_PLURAL } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { kruntimesClients, refusalError, runClient } from '@kruntimes/run-client';
import { currentPhase, waitOutcome } from '@kruntimes/run-state';
import type { WaitTarget } from '@kruntimes/run-state';
import { invokeFunction } from '@kruntimes/sdk';
import { kubeconfigYaml } from '@kruntimes/testing';
import { parse, stringify } from 'yaml';
import { DevError, waitUntil } from './dev-components.ts';
import { namespacedServiceAccount, prepareRuntimeNamespace, serviceAccountToken } from './dev-rbac.ts';

export const DEMO_NAMESPACE = 'demo';
export const DEMO_INVOKER = 'demo-invoker';
/** Room on each demo Pod for the README tour's own Runs beside the demo's. */
export const DEMO_RUNS_PER_POD = 4;
const READY_TIMEOUT_MS = 120_000;
const INVOKE_TIMEOUT_MS = 60_000;
/** A container restarted this often is crash-looping: waiting on longer would only hide it. */
const CRASHING_RESTARTS = 3;

export const DEMO_PYTHON = `def handle(event, context):
    name = event.get("name", "world") if isinstance(event, dict) else "world"
    return {"greeting": f"Hello, {name}!", "language": "python"}
`;
export const DEMO_BASH = `handle() {
  local event
  event=$(cat)
  printf '{"echo":%s,"language":"bash"}' "$event"
}
`;
export const DEMO = [
  { run: 'hello-py', runtime: 'python', language: 'python', source: DEMO_PYTHON, handler: 'main:handle', payload: { name: 'kruntimes' } },
  { run: 'echo-sh', runtime: 'bash', language: 'bash', source: DEMO_BASH, handler: 'handle', payload: { message: 'hello from bash' } },
] as const;

export interface DemoInvoker {
  token: string;
  /** Its kubeconfig, with `demo` as the namespace of every context. */
  kubeconfig: string;
}

/** The demo namespace (runtimed's RBAC) and the ServiceAccount that may only get its Runs, as a kubeconfig under `dir`. */
export async function prepareDemoInvoker(admin: KubeConfig, dir: string, server: string, caPem: string): Promise<DemoInvoker> {
  await prepareRuntimeNamespace(admin, DEMO_NAMESPACE);
  await namespacedServiceAccount(admin, DEMO_NAMESPACE, DEMO_INVOKER, [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get'] },
  ]);
  const token = await serviceAccountToken(admin, DEMO_NAMESPACE, DEMO_INVOKER);
  const kubeconfig = join(dir, `${DEMO_INVOKER}.kubeconfig`);
  const yaml = kubeconfigYaml({ server, caPem, user: `${DEMO_NAMESPACE}:${DEMO_INVOKER}`, token });
  await writeFile(kubeconfig, withNamespace(yaml, DEMO_NAMESPACE), { mode: 0o600 });
  return { token, kubeconfig };
}

/** Each demo's Runtime and function Run; ones left from an earlier run of the same directory are kept. */
export async function createDemoObjects(admin: KubeConfig): Promise<void> {
  const { runtimes, runs } = kruntimesClients(admin);
  const apiVersion = `${API_GROUP}/${API_VERSION}` as const;
  for (const demo of DEMO) {
    const runtime: Runtime = {
      apiVersion,
      kind: 'Runtime',
      metadata: { name: demo.runtime },
      // The Python Runtime Server can wait for input (docs/waiting-input.md): its demo Runtime says so.
      spec: {
        language: demo.language,
        runs: DEMO_RUNS_PER_POD,
        ...(demo.language === 'python' ? { capabilities: [CHECKPOINT_CAPABILITY] } : {}),
      },
    };
    await runtimes.create(DEMO_NAMESPACE, runtime); // AlreadyExists: kept as an earlier run of this directory left it
    const run: Run = {
      apiVersion,
      kind: 'Run',
      metadata: { name: demo.run },
      spec: { runtime: demo.runtime, source: { inline: demo.source }, mode: { function: { handler: demo.handler } } },
    };
    await runs.create(DEMO_NAMESPACE, run); // AlreadyExists: kept as an earlier run of this directory left it
  }
}

/** Waits for each demo Run to be Ready and invokes it through its endpoint; one line per answer. */
export async function invokeDemo(admin: KubeConfig, invoker: DemoInvoker, signal: AbortSignal, check: () => void): Promise<string[]> {
  const results: string[] = [];
  for (const demo of DEMO) {
    const run = await waitDemoRun(admin, demo.run, signal, check);
    const endpoint = run.status?.endpoint;
    if (endpoint === undefined) throw new Error(`Run ${demo.run} is Ready without an endpoint`);
    const answer = await invokeFunction({
      url: endpoint.url,
      ...(endpoint.caBundle === undefined ? {} : { caBundle: endpoint.caBundle }),
      token: invoker.token,
      payload: demo.payload,
      timeoutMs: INVOKE_TIMEOUT_MS,
    });
    results.push(`  ${demo.run} (${demo.language}) ${JSON.stringify(demo.payload)} -> ${JSON.stringify(answer.result)}`);
  }
  return results;
}

/** Steady traffic for the dashboards' check: each function invoked this often, with a pause between rounds. */
const TRAFFIC_ROUNDS = 12;
const TRAFFIC_PAUSE_MS = 250;

/**
 * After the demo, traffic of the kinds the dashboards show, spread over several scrapes so
 * that every rate() sees increases: the demo functions invoked in rounds through the
 * gateway, and one more task Run (a bind, a task duration). Returns what it did, as a line.
 */
export async function dashboardTraffic(admin: KubeConfig, invoker: DemoInvoker, signal: AbortSignal, check: () => void): Promise<string> {
  const body: Run & { metadata: { generateName: string } } = {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'Run',
    // A new name each time: an earlier `dev up` of the same directory left its own.
    metadata: { generateName: 'dashboards-' },
    spec: { runtime: 'python', source: { inline: 'print("traffic for the dashboards")\n' }, mode: { task: {} } },
  };
  const created = await runClient(admin).create(DEMO_NAMESPACE, body);
  if (!created.ok) throw refusalError(created);
  const task = created.object;
  const endpoints = await Promise.all(DEMO.map(async (demo) => ({ demo, run: await waitDemoRun(admin, demo.run, signal, check) })));
  for (let round = 0; round < TRAFFIC_ROUNDS; round += 1) {
    for (const { demo, run } of endpoints) {
      const endpoint = run.status?.endpoint;
      if (endpoint === undefined) throw new Error(`Run ${demo.run} is Ready without an endpoint`);
      await invokeFunction({
        url: endpoint.url,
        ...(endpoint.caBundle === undefined ? {} : { caBundle: endpoint.caBundle }),
        token: invoker.token,
        payload: demo.payload,
        timeoutMs: INVOKE_TIMEOUT_MS,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, TRAFFIC_PAUSE_MS));
  }
  const name = task.metadata.name ?? '';
  const finished = await waitDemoRun(admin, name, signal, check, 'finished');
  return `traffic for the dashboards: ${String(TRAFFIC_ROUNDS * DEMO.length)} invocations over ${String(TRAFFIC_ROUNDS)} rounds, task Run ${name} ${currentPhase(finished)}`;
}

/** A crash-looping container of the demo namespace fails the wait at once, naming the log to read. */
async function throwIfCrashing(core: CoreV1Api): Promise<void> {
  for (const pod of (await core.listNamespacedPod({ namespace: DEMO_NAMESPACE })).items) {
    const crashing = (pod.status?.containerStatuses ?? []).find((container) => container.restartCount >= CRASHING_RESTARTS);
    const name = pod.metadata?.name ?? '';
    if (crashing !== undefined)
      throw new Error(`container ${crashing.name} of Pod ${name} keeps crashing (\`krt dev logs ${name}/${crashing.name}\`)`);
  }
}

/** Waits for a demo Run to be Ready (a function) or finished (a task); a Run that can no longer get there fails the wait. */
export async function waitDemoRun(
  admin: KubeConfig,
  name: string,
  signal: AbortSignal,
  check: () => void,
  target: WaitTarget = 'ready',
): Promise<Run> {
  const runs = runClient(admin);
  const core = admin.makeApiClient(CoreV1Api);
  let run: Run | undefined;
  try {
    await waitUntil(`Run ${name} to be ${target === 'ready' ? 'Ready' : 'finished'}`, signal, READY_TIMEOUT_MS, async () => {
      check();
      const read = await runs.get(DEMO_NAMESPACE, name);
      if (read === undefined) throw new Error(`Run ${DEMO_NAMESPACE}/${name} not found`);
      run = read;
      await throwIfCrashing(core);
      const phase = currentPhase(read);
      const outcome = waitOutcome(phase, target);
      if (outcome === 'unreachable')
        throw new Error(
          `Run ${name} ended ${phase} (${read.status?.reason ?? ''}: ${read.status?.message ?? ''}) instead of becoming ${target === 'ready' ? 'Ready' : 'finished'}`,
        );
      return outcome === 'satisfied';
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new DevError(
      `${error instanceof Error ? error.message : String(error)} (last phase: ${run?.status?.phase ?? 'none'}; see \`krt dev logs\`)`,
    );
  }
  if (run === undefined) throw new Error(`Run ${name} not read`);
  return run;
}

/** A core object (a Secret) created, or kept when it exists. */
export async function createIfMissing(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
  }
}

function withNamespace(kubeconfig: string, namespace: string): string {
  const config = parse(kubeconfig) as { contexts: { context: Record<string, string> }[] };
  for (const context of config.contexts) context.context.namespace = namespace;
  return stringify(config);
}
