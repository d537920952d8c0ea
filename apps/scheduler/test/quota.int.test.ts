// Quota at submission, on the real control plane: a ResourceQuota on `count/runs.kruntimes.io`
// refuses the create beyond it with the API server's own message (the SDK's client and
// `krt run` alike), and a namespace's `kruntimes.io/run-slots` cap is honoured by the
// scheduler over all the namespace's Runtimes.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Event } from '@kubernetes/client-node';
import { NAMESPACE_RUN_SLOTS_ANNOTATION, RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { Scheduler } from '@kruntimes/scheduler-core';
import { REPO_ROOT, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { Environment, WAIT, cluster, core, createRunIn, deleteRunIn, recordingLogger } from './environment.ts';
import type { RunObserver } from './environment.ts';

const phase = (run: Run): string => run.status?.phase ?? 'Pending';
const RUN_COUNT = 'count/runs.kruntimes.io';

/** `krt` as a user runs it: its own process, one kubeconfig file. */
async function krt(args: readonly string[], kubeconfig: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'apps/krt/src/main.ts'), '--kubeconfig', kubeconfig, ...args], {
    env: { ...process.env, KUBECONFIG: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { code, stderr };
  } finally {
    clearTimeout(timer);
  }
}

describe('object-count quota on Runs (the API server: quota admission and the resource-quota controller)', () => {
  let namespace: TestNamespace;
  let dir: string;

  beforeEach(async () => {
    namespace = await cluster.createNamespace({ prefix: 'run-count' });
    dir = await mkdtemp(join(tmpdir(), 'run-count-'));
  });

  afterEach(async () => {
    await namespace.delete();
    await rm(dir, { recursive: true, force: true });
  });

  test('a ResourceQuota of 2 Runs: two creates accepted, the third refused with the API server message, by the client and by krt run; a deleted Run makes room', async () => {
    const ns = namespace.name;
    await core.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'runs' }, spec: { hard: { [RUN_COUNT]: '2' } } },
    });
    // Quota admission enforces only what the resource-quota controller has put in status.hard.
    await waitFor(
      'the resource-quota controller to record the quota in status.hard',
      async () => {
        const quota = await core.readNamespacedResourceQuota({ namespace: ns, name: 'runs' });
        return quota.status?.hard?.[RUN_COUNT] === '2' ? quota : undefined;
      },
      WAIT,
    );
    await createRunIn(ns, 'first', 'shell');
    await createRunIn(ns, 'second', 'shell');

    const refusal = await createRunIn(ns, 'third', 'shell').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ApiException);
    const answer = refusal as ApiException<string>;
    expect(answer.code).toBe(403);
    const status = JSON.parse(answer.body) as { reason: string; message: string };
    expect(status.reason).toBe('Forbidden');
    const message = `runs.kruntimes.io "third" is forbidden: exceeded quota: runs, requested: ${RUN_COUNT}=1, used: ${RUN_COUNT}=2, limited: ${RUN_COUNT}=2`;
    expect(status.message).toBe(message);

    // krt run prints the API server's message as it is, and exits 4 (refused: not the user's input, not the platform down).
    const kubeconfig = (await cluster.writeKubeconfigs(dir)).admin ?? '';
    const manifest = join(dir, 'fourth.yaml');
    await writeFile(
      manifest,
      'apiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata:\n  name: fourth\nspec:\n  runtime: shell\n  source:\n    inline: "echo hi"\n  mode: {task: {}}\n',
    );
    const cli = await krt(['-n', ns, 'run', '-f', manifest], kubeconfig);
    expect(cli.stderr.trim()).toBe(`error: the API server answered HTTP 403: ${message.replace('"third"', '"fourth"')}`);
    expect(cli.code).toBe(4);

    // The resource-quota controller counts a deletion: the next create fits again.
    await deleteRunIn(ns, 'first');
    await waitFor(
      'the quota to count 1 Run after the delete',
      async () => {
        const quota = await core.readNamespacedResourceQuota({ namespace: ns, name: 'runs' });
        return quota.status?.used?.[RUN_COUNT] === '1' ? quota : undefined;
      },
      WAIT,
    );
    await createRunIn(ns, 'third', 'shell');
  });
});

describe('the run-slot cap of a namespace (annotation kruntimes.io/run-slots), honoured by the scheduler', () => {
  let env: Environment;
  let scheduler: Scheduler | undefined;
  let observer: RunObserver | undefined;
  let logger: ReturnType<typeof recordingLogger>;

  beforeEach(async () => {
    env = await Environment.start('run-slots');
    logger = recordingLogger();
  });

  afterEach(async () => {
    observer?.stop();
    observer = undefined;
    await scheduler?.stop();
    scheduler = undefined;
    await env.stop();
  });

  async function setCap(slots: string): Promise<void> {
    const path = `/metadata/annotations/${NAMESPACE_RUN_SLOTS_ANNOTATION.replace('/', '~1')}`;
    const namespace = await core.readNamespace({ name: env.name });
    const body = namespace.metadata?.annotations === undefined ? [{ op: 'add', path: '/metadata/annotations', value: {} }] : [];
    await core.patchNamespace({ name: env.name, body: [...body, { op: 'add', path, value: slots }] });
  }

  async function waitForEvent(run: string, reason: string): Promise<CoreV1Event> {
    return waitFor(
      `a ${reason} Event on Run ${run}`,
      async () => {
        const list = await core.listNamespacedEvent({ namespace: env.name, fieldSelector: `involvedObject.name=${run}` });
        return list.items.find((event) => event.reportingComponent === 'kruntimes-scheduler' && event.reason === reason);
      },
      WAIT,
    );
  }

  const waitsForCap = (run: Run): boolean => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.runSlotCapReached;

  test('cap 2 with room for 8: two Runs bind, the third waits RunSlotCapReached and binds when one finishes; a Run of another Runtime of the namespace waits too and binds when one is deleted', async () => {
    await setCap('2');
    await env.createRuntime('a', { replicas: 1, runs: 4 });
    await env.createRuntime('b', { replicas: 1, runs: 4 });
    await env.readyPods('a', 1);
    await env.readyPods('b', 1);
    observer = await env.observeRuns(4);
    // Least privilege: the scheduler's own rules (the namespace's annotation is read with its namespaces watch).
    scheduler = await env.startScheduler(logger);

    for (const name of ['a-1', 'a-2', 'a-3']) await env.createRun(name, 'a');
    await env.waitForRun('a-1', 'bound', (run) => phase(run) === 'Scheduled');
    await env.waitForRun('a-2', 'bound', (run) => phase(run) === 'Scheduled');
    const waiting = await env.waitForRun('a-3', 'Pending with RunSlotCapReached', waitsForCap);
    expect(waiting.status?.message).toBe(
      `namespace ${env.name} holds all 2 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "2"): the Run binds when one of them frees`,
    );
    expect(waiting.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: RUN_REASONS.runSlotCapReached,
    });
    expect((await waitForEvent('a-3', RUN_REASONS.runSlotCapReached)).type).toBe('Warning');

    // a-1 runs and finishes (the test plays runtimed): its slot frees and a-3 takes it.
    await env.act('a-1', 'runtimed', { type: 'Claim' });
    expect(observer.everAssigned.has('a-3')).toBe(false);
    await env.act('a-1', 'runtimed', { type: 'Succeeded' });
    await env.waitForRun('a-3', 'bound once a-1 finished', (run) => phase(run) === 'Scheduled');

    // The cap spans the namespace's Runtimes: a Run of b waits while a-2 and a-3 hold both slots.
    await env.createRun('b-1', 'b');
    await env.waitForRun('b-1', 'Pending with RunSlotCapReached', waitsForCap);
    expect(observer.everAssigned.has('b-1')).toBe(false);

    // a-2 deleted: a slot of the namespace frees, which wakes Runtime b.
    await env.deleteRun('a-2');
    await env.waitForRun('b-1', 'bound once a-2 was deleted', (run) => phase(run) === 'Scheduled');

    observer.stop();
    expect(observer.maxHeldInNamespace).toBe(2);
    expect(observer.watchErrors).toEqual([]);
    expect(observer.overcommits).toEqual([]);
    expect(observer.doubleBound()).toEqual([]);
    expect(logger.errors).toEqual([]);
    expect(env.logger.errors).toEqual([]);
  });

  test('a cap raised from 0 to 3 over two Runtimes with 4 Runs each: both Runtimes place at once, never more than 3 slots held, the others wait naming the new cap', async () => {
    await setCap('0');
    await env.createRuntime('a', { replicas: 1, runs: 4 });
    await env.createRuntime('b', { replicas: 1, runs: 4 });
    await env.readyPods('a', 1);
    await env.readyPods('b', 1);
    observer = await env.observeRuns(4);
    scheduler = await env.startScheduler(logger, {
      workers: 4,
      // One write at a time: a pass's later binds are assumed only after its first write
      // returns, while the other Runtime's pass may plan (unless the namespace's passes take turns).
      bindConcurrency: 1,
    });
    await Promise.all(['a', 'b'].flatMap((runtime) => [1, 2, 3, 4].map((i) => env.createRun(`${runtime}-${i}`, runtime))));
    await waitFor(
      '8 Runs Pending with RunSlotCapReached under a cap of 0',
      async () => ((await env.listRuns()).filter(waitsForCap).length === 8 ? true : undefined),
      WAIT,
    );

    // The namespace's change wakes both Runtimes at once, each with 4 Runs it could bind.
    await setCap('3');
    const underNewCap = (run: Run): boolean => waitsForCap(run) && run.status?.message?.includes('all 3 run slots') === true;
    const runs = await waitFor(
      'every Run Scheduled or Pending with RunSlotCapReached naming the cap of 3',
      async () => {
        const all = await env.listRuns();
        return all.every((run) => phase(run) === 'Scheduled' || underNewCap(run)) ? all : undefined;
      },
      WAIT,
    );
    const names = (selected: Run[]): string[] => selected.map((run) => run.metadata.name ?? '');
    expect(names(runs.filter((run) => phase(run) === 'Scheduled'))).toHaveLength(3);
    expect(names(runs.filter(underNewCap))).toHaveLength(5);
    await scheduler.stop();
    scheduler = undefined;
    observer.stop();
    expect(observer.maxHeldInNamespace).toBe(3);
    expect(observer.overcommits).toEqual([]);
    expect(observer.doubleBound()).toEqual([]);
    expect(logger.errors).toEqual([]);
  });
});
