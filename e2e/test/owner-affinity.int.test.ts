import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { CONDITION_TYPES, DEFAULTS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { EndpointsResolver, Forwarder, GATEWAY_RBAC_RULES, OwnerHints, hintKey } from '@kruntimes/gateway-core';
import type { ForwardResult } from '@kruntimes/gateway-core';
import { currentPhase, findCondition } from '@kruntimes/run-state';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { kubeConfigFor } from '@kruntimes/testing';
import { pino } from 'pino';
import { System } from '../src/index.ts';

/**
 * Owner affinity (docs/invoke-contract.md "Owner affinity") on the real control plane and
 * Runtime Pods: the gateway's forwarder with a hint store the test can see and seed, beside
 * the real gateway process. A hint is followed; a stale one (the Run's owner is elsewhere)
 * costs one peer hop and is corrected; one naming a Pod that is gone after a recovery is not
 * dialled; a forged one (an address outside the Runtime's endpoints) is never dialled.
 */
const HANDLER = 'def handle(event, context):\n    return event\n';
const RUNTIME = 'aff';
const RUN = 'fn-aff';
const TEST_TIMEOUT_MS = 300_000;
const logger = pino({ level: 'silent' });

let system: System;
let resolver: EndpointsResolver;
let hints: OwnerHints;
let forwarder: Forwarder;

beforeAll(async () => {
  system = await System.start({
    prefix: 'owner-affinity',
    staleRecovery: true,
    podEnv: { KRT_LEASE_DURATION_SECONDS: '4', KRT_LEASE_RENEW_SECONDS: '1' },
  });
  await system.grantGetRuns('alice');
  const token = await system.serviceAccountToken('affinity-gateway', GATEWAY_RBAC_RULES);
  const { server, caPem } = system.cluster.info;
  resolver = new EndpointsResolver({
    kubeConfig: kubeConfigFor({ server, caPem, user: 'affinity-gateway', token }),
    namespace: system.name,
    logger,
  });
  await resolver.start();
  hints = new OwnerHints();
  forwarder = new Forwarder({ resolver, caPem: system.internalCa.certPem, logger, ownerHints: hints, connectTimeoutMs: 2_000 });
  await system.createRuntime(RUNTIME, { language: 'python', replicas: 3 });
  await system.waitRuntimeReady(RUNTIME, 3);
  await system.createFunctionRun(RUN, RUNTIME, HANDLER, 'main:handle');
  await system.waitReady(RUN);
}, 240_000);

afterAll(async () => {
  forwarder.close();
  await resolver.stop();
  await system.stop();
});

const grpcAddress = (ip: string): string => `${ip}:${String(DEFAULTS.runtimedGrpcPort)}`;

async function forward(run: Run, id: string): Promise<ForwardResult> {
  return forwarder.forward({
    namespace: system.name,
    runtime: RUNTIME,
    uid: run.metadata.uid ?? '',
    invocationId: id,
    payload: Buffer.from('{"ping":1}'),
    timeoutMs: 10_000,
    token: system.token('alice'),
    signal: new AbortController().signal,
  });
}

const key = (run: Run): string => hintKey(system.name, RUNTIME, run.metadata.uid ?? '');
const attemptOf = (result: ForwardResult): number | undefined => (result.ok ? result.response.attempt : undefined);
const codeOf = (result: ForwardResult): string => (result.ok ? 'OK' : result.error.code);

/** The Runtime's ready Pods: name, IP. */
async function readyPods(): Promise<{ name: string; ip: string }[]> {
  const pods = (await system.core.listNamespacedPod({ namespace: system.name, labelSelector: podLabelSelector(RUNTIME) })).items;
  return pods
    .filter(
      (pod) =>
        pod.metadata?.deletionTimestamp === undefined && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .map((pod) => ({ name: pod.metadata?.name ?? '', ip: pod.status?.podIP ?? '' }));
}

/** One runtimed's `kruntimes_runtimed_invocations_total`, summed by port. */
async function invocations(ip: string): Promise<{ grpc: number; peer: number }> {
  const text = await (await fetch(`http://${ip}:${String(DEFAULTS.runtimedMetricsPort)}/metrics`)).text();
  const counts = { grpc: 0, peer: 0 };
  for (const [, labels = '', value = '0'] of text.matchAll(/^kruntimes_runtimed_invocations_total\{([^}]*)\} (\S+)$/gm)) {
    if (labels.includes('port="grpc"')) counts.grpc += Number(value);
    else if (labels.includes('port="peer"')) counts.peer += Number(value);
  }
  return counts;
}

async function ownerIp(): Promise<string> {
  const ip = (await system.assignedPod(RUN)).status?.podIP ?? '';
  expect(ip).not.toBe('');
  return ip;
}

test(
  'the hint is followed: after the first answer named the owner, every invoke dials its runtimed and none takes a peer hop',
  async () => {
    const run = await system.getRun(RUN);
    const owner = await ownerIp();
    const first = await forward(run, 'followed-0');
    expect(codeOf(first)).toBe('OK');
    const before = await invocations(owner);
    for (let i = 1; i <= 5; i += 1) {
      const result = await forward(run, `followed-${String(i)}`);
      expect({ i, code: codeOf(result), upstream: result.upstream }).toEqual({ i, code: 'OK', upstream: grpcAddress(owner) });
    }
    const after = await invocations(owner);
    expect(after.grpc - before.grpc).toBe(5);
    expect(after.peer - before.peer).toBe(0);

    // The real gateway process learns the same way: after its first invoke, the owner receives them all directly.
    const uid = run.metadata.uid ?? '';
    expect((await system.invoke({ runtime: RUNTIME, uid, token: system.token('alice'), body: '{}' })).status).toBe(200);
    const gatewayBefore = await invocations(owner);
    for (let i = 0; i < 5; i += 1)
      expect((await system.invoke({ runtime: RUNTIME, uid, token: system.token('alice'), body: '{}' })).status).toBe(200);
    const gatewayAfter = await invocations(owner);
    expect({ grpc: gatewayAfter.grpc - gatewayBefore.grpc, peer: gatewayAfter.peer - gatewayBefore.peer }).toEqual({ grpc: 5, peer: 0 });
  },
  TEST_TIMEOUT_MS,
);

test(
  'a stale hint (a ready Pod that is not the owner) costs one peer hop, is answered correctly, and is replaced by the owner',
  async () => {
    const run = await system.getRun(RUN);
    const owner = await ownerIp();
    const other = (await readyPods()).find((pod) => pod.ip !== owner);
    if (other === undefined) throw new Error('no second ready Pod');
    hints.remember(key(run), { ip: other.ip, attempt: run.status?.attempt ?? 1 });
    const ownerBefore = await invocations(owner);
    const stale = await forward(run, 'stale-0');
    expect({ code: codeOf(stale), upstream: stale.upstream, attempt: attemptOf(stale) }).toEqual({
      code: 'OK',
      upstream: grpcAddress(other.ip),
      attempt: run.status?.attempt,
    });
    expect((await invocations(owner)).peer - ownerBefore.peer).toBe(1);
    const next = await forward(run, 'stale-1');
    expect({ code: codeOf(next), upstream: next.upstream }).toEqual({ code: 'OK', upstream: grpcAddress(owner) });
  },
  TEST_TIMEOUT_MS,
);

test(
  'a forged hint (an address outside the Runtime endpoints) is never dialled; the invoke is served by the owner path',
  async () => {
    const run = await system.getRun(RUN);
    const owner = await ownerIp();
    // Outside the local node's Pod address pool (127.0.0.2-254): a listener there counts any dial.
    const forgedIp = '127.0.3.3';
    let dialled = 0;
    const trap: Server = createServer((socket) => {
      dialled += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => trap.listen(DEFAULTS.runtimedGrpcPort, forgedIp, resolve));
    try {
      hints.remember(key(run), { ip: forgedIp, attempt: 1_000 });
      for (let i = 0; i < 3; i += 1) {
        const result = await forward(run, `forged-${String(i)}`);
        expect(codeOf(result)).toBe('OK');
        expect(result.upstream).not.toBe(grpcAddress(forgedIp));
      }
      expect(dialled).toBe(0);
      // The forged hint was forgotten: the owner's answer set the true one.
      const result = await forward(run, 'forged-3');
      expect(result.upstream).toBe(grpcAddress(owner));
    } finally {
      await new Promise((resolve) => trap.close(resolve));
    }
  },
  TEST_TIMEOUT_MS,
);

const readyTrue = (run: Run): boolean =>
  currentPhase(run) === 'Ready' && findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.status === 'True';

test(
  'the hinted owner Pod is gone and the Run recovered onto another Pod: answered by the new owner at attempt 2, the hint follows it',
  async () => {
    const run = await system.getRun(RUN);
    const oldOwner = await ownerIp();
    expect(codeOf(await forward(run, 'moved-0'))).toBe('OK');
    await system.core.deleteNamespacedPod({ namespace: system.name, name: run.status?.assignedPod ?? '' });
    const moved = await system.waitForRun(RUN, 'Ready at attempt 2', (r) => readyTrue(r) && r.status?.attempt === 2, 120_000);
    const newOwner = (await system.assignedPod(RUN)).status?.podIP ?? '';
    // Until the caches of the resolver and of runtimed show the recovery, the contract's 503s
    // (the request not served) are the only other answer; bounded.
    const others: string[] = [];
    let served: ForwardResult | undefined;
    for (let i = 0; i < 60 && served === undefined; i += 1) {
      const result = await forward(moved, `moved-${String(i + 1)}`);
      if (result.ok) served = result;
      else {
        expect(result.error.status).toBe(503);
        others.push(result.error.code);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    if (served === undefined) throw new Error(`never served after the recovery: ${others.join(', ')}`);
    expect(attemptOf(served)).toBe(2);
    // The old owner's address is dialled only if a new Pod got it and is among the ready endpoints.
    if (served.upstream === grpcAddress(oldOwner)) expect((await readyPods()).map((pod) => pod.ip)).toContain(oldOwner);
    const next = await forward(moved, 'moved-last');
    expect({ code: codeOf(next), attempt: attemptOf(next), upstream: next.upstream }).toEqual({
      code: 'OK',
      attempt: 2,
      upstream: grpcAddress(newOwner),
    });
  },
  TEST_TIMEOUT_MS,
);
