import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CONDITION_TYPES } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase, findCondition } from '@kruntimes/run-state';
import { STALE_RECOVERY_RULES, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { System } from '@kruntimes/e2e';
import { kubeConfigFor } from '@kruntimes/testing';
import type { HttpAnswer } from '@kruntimes/testing';
import { overlappingServing, servedInvocations } from './serving-overlap.ts';

/**
 * Recovery seen from a caller: invokes through the real HTTPS gateway before, during and
 * after the owner is lost (runtimed's Pod Lease: 4 s, renewed every second).
 */
const HANDLER = `
def handle(event, context):
    return event
`;
const WAIT = { timeoutMs: 90_000, intervalMs: 250 };
const TEST_TIMEOUT_MS = 300_000;

let system: System;
let recovery: StaleRecovery;

beforeAll(async () => {
  system = await System.start({ prefix: 'recovery-gw', podEnv: { KRT_LEASE_DURATION_SECONDS: '4', KRT_LEASE_RENEW_SECONDS: '1' } });
  const token = await system.serviceAccountToken('stale-recovery', STALE_RECOVERY_RULES);
  recovery = new StaleRecovery({
    kubeConfig: kubeConfigFor({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user: 'stale-recovery', token }),
    namespace: system.name,
    logger: { error: () => undefined, debug: () => undefined, info: () => undefined },
    recheckMs: 1_000,
  });
  await recovery.start();
  system.adopt(recovery);
  await system.grantGetRuns('alice');
}, 180_000);

afterEach(async () => {
  // Over the whole test, zombies included: never two registrations of one Run serving at once.
  const served = await servedInvocations(system.node.config.stateDir, system.name);
  expect(served.length).toBeGreaterThan(0); // every test invokes: the logs were read
  expect(overlappingServing(served)).toEqual([]);
});

afterAll(async () => {
  await system.stop();
});

const readyTrue = (run: Run): boolean =>
  currentPhase(run) === 'Ready' && findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.status === 'True';
const attemptOf = (answer: HttpAnswer): unknown => (answer.json as { attempt?: unknown } | undefined)?.attempt;

async function invoke(runtime: string, run: Run): Promise<HttpAnswer> {
  return system.invoke({ runtime, uid: run.metadata.uid ?? '', token: system.token('alice'), body: '{"ping":1}' });
}

/** Answers other than the awaited one that one invokeUntil accepts: 60 x 250 ms, 15 s of lagging caches. */
const MAX_OTHER_ANSWERS = 60;

/**
 * Invokes until one answers `status` (the caches of the gateway and runtimed follow the Run
 * a moment later). Every other answer is counted and must be an error of the contract (a
 * code and a source in the body); more than MAX_OTHER_ANSWERS of them fail the test.
 */
async function invokeUntil(runtime: string, run: Run, status: number): Promise<HttpAnswer> {
  const others: string[] = [];
  const deadline = performance.now() + WAIT.timeoutMs;
  for (;;) {
    const answer = await invoke(runtime, run);
    if (answer.status === status) return answer;
    const error = (answer.json as { error?: { code?: unknown; source?: unknown } } | undefined)?.error;
    if (typeof error?.code !== 'string' || typeof error.source !== 'string')
      throw new Error(`an answer ${String(answer.status)} without the error shape of the contract: ${answer.body}`);
    others.push(`${String(answer.status)} ${error.code}`);
    if (others.length > MAX_OTHER_ANSWERS || performance.now() >= deadline)
      throw new Error(
        `no ${String(status)} from ${run.metadata.name ?? ''} after ${String(others.length)} other answers: ${others.join(', ')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, WAIT.intervalMs));
  }
}

async function functionOn(runtime: string, name: string): Promise<Run> {
  await system.createRuntime(runtime, { language: 'python', replicas: 2 });
  await system.waitRuntimeReady(runtime, 2);
  await system.createFunctionRun(name, runtime, HANDLER, 'main:handle');
  return system.waitReady(name);
}

async function invocationsServedBy(pod: string, podUID: string): Promise<number> {
  // A log that cannot be read fails the test: an empty count would prove nothing.
  const text = await readFile(join(system.node.config.stateDir, 'logs', `${system.name}_${pod}_${podUID}`, 'runtime-server.log'), 'utf8');
  return text.split('\n').filter((line) => line.includes('"msg":"invocation succeeded"') || line.includes('"msg":"invocation failed"'))
    .length;
}

test(
  '(a) the owner Pod is deleted: invokes succeed again once attempt 2 is Ready, at the same URL',
  async () => {
    const first = await functionOn('ga', 'fn-ga');
    expect(attemptOf(await invokeUntil('ga', first, 200))).toBe(1);
    await system.core.deleteNamespacedPod({ namespace: system.name, name: first.status?.assignedPod ?? '' });
    const second = await system.waitForRun('fn-ga', 'Ready at attempt 2', (run) => readyTrue(run) && run.status?.attempt === 2);
    expect(second.status?.endpoint?.url).toBe(first.status?.endpoint?.url);
    expect(attemptOf(await invokeUntil('ga', second, 200))).toBe(2);
  },
  TEST_TIMEOUT_MS,
);

test(
  '(b) a frozen owner: invokes get 503 while it is Recovering, and succeed at the same attempt once it is thawed',
  async () => {
    const first = await functionOn('gb', 'fn-gb');
    const pod = first.status?.assignedPod ?? '';
    expect((await invokeUntil('gb', first, 200)).status).toBe(200);
    system.node.freezePod(system.name, pod);
    await system.waitForRun(
      'fn-gb',
      'Recovering',
      (run) => findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.reason === 'Recovering',
    );
    const refused = await invokeUntil('gb', first, 503);
    expect((refused.json as { error?: { source?: string } } | undefined)?.error?.source).toBe('platform');
    system.node.thawPod(system.name, pod);
    await system.waitForRun('fn-gb', 'Ready=True again', readyTrue);
    expect(attemptOf(await invokeUntil('gb', first, 200))).toBe(1);
  },
  TEST_TIMEOUT_MS,
);

test(
  '(c) a zombie (Pod object force-deleted, processes running) receives no invocation, directly or by a peer hop; the new owner serves them',
  async () => {
    const first = await functionOn('gc', 'fn-gc');
    const pod = first.status?.assignedPod ?? '';
    const podUID = first.status?.assignedPodUID ?? '';
    await invokeUntil('gc', first, 200);
    const zombie = await system.node.forceDeletePod(system.name, pod);
    const before = await invocationsServedBy(pod, zombie);
    // It served the first invoke: its log is the one being read.
    expect(before).toBeGreaterThanOrEqual(1);
    const second = await system.waitForRun('fn-gc', 'Ready at attempt 2', (run) => readyTrue(run) && run.status?.attempt === 2);
    expect(attemptOf(await invokeUntil('gc', second, 200))).toBe(2);
    for (let i = 0; i < 5; i += 1) {
      const answer = await invoke('gc', second);
      expect({ i, status: answer.status, attempt: attemptOf(answer) }).toEqual({ i, status: 200, attempt: 2 });
    }
    expect(await invocationsServedBy(pod, zombie)).toBe(before);
    expect(zombie).toBe(podUID);
    await system.node.killZombie(zombie).catch(() => undefined);
  },
  TEST_TIMEOUT_MS,
);
