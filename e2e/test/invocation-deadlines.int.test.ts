import { DEFAULTS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { EndpointsResolver, Forwarder, GATEWAY_RBAC_RULES, OwnerHints, TIMEOUT_HEADER, hintKey } from '@kruntimes/gateway-core';
import type { ForwardResult } from '@kruntimes/gateway-core';
import type { V1Pod } from '@kubernetes/client-node';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { kubeConfigFor } from '@kruntimes/testing';
import { pino } from 'pino';
import { System } from '../src/index.ts';

/**
 * The deadlines of the invoke path's hops (gateway, a receiving runtimed's peer hop, the owner's
 * call to its Runtime Server) on the real control plane and Runtime Pods: with the owner's
 * Runtime Server hung (its processes stopped with SIGSTOP), the client gets the owner's typed
 * answer, a 504 that names the Runtime Server as the cause, and not the gateway's own deadline
 * firing first. The invocation timeout is the caller's (the timeout header), far below the
 * Run's, so every hop counts from the same timeout.
 */
const HANDLER = 'def handle(event, context):\n    return event\n';
const RUNTIME = 'dl';
const RUN = 'fn-dl';
const TIMEOUT_MS = 2_000;
const CAUSE = `the Runtime Server did not answer within ${String(TIMEOUT_MS)} ms`;
const logger = pino({ level: 'silent' });

let system: System;
let resolver: EndpointsResolver;
let hints: OwnerHints;
let forwarder: Forwarder;

beforeAll(async () => {
  system = await System.start({ prefix: 'deadlines' });
  await system.grantGetRuns('alice');
  const token = await system.serviceAccountToken('deadlines-gateway', GATEWAY_RBAC_RULES);
  const { server, caPem } = system.cluster.info;
  resolver = new EndpointsResolver({
    kubeConfig: kubeConfigFor({ server, caPem, user: 'deadlines-gateway', token }),
    namespace: system.name,
    logger,
  });
  await resolver.start();
  hints = new OwnerHints();
  forwarder = new Forwarder({ resolver, caPem: system.internalCa.certPem, logger, ownerHints: hints, connectTimeoutMs: 2_000 });
  await system.createRuntime(RUNTIME, { language: 'python', replicas: 2 });
  await system.waitRuntimeReady(RUNTIME, 2);
  await system.createFunctionRun(RUN, RUNTIME, HANDLER, 'main:handle');
  await system.waitReady(RUN);
}, 240_000);

afterAll(async () => {
  forwarder.close();
  await resolver.stop();
  await system.stop();
});

/** The process group of one container of a Pod (the local node's container ID is `local://<pid>`, a group leader). */
function containerGroup(pod: V1Pod, container: string): number {
  const id = pod.status?.containerStatuses?.find((status) => status.name === container)?.containerID ?? '';
  const pid = Number.parseInt(id.replace('local://', ''), 10);
  if (!(pid > 0)) throw new Error(`no process of ${container} in ${pod.metadata?.name ?? ''}`);
  return pid;
}

/** Runs `during` with the owner's Runtime Server stopped (SIGSTOP to its process group), then lets it go on. */
async function withOwnerServerHung<T>(during: (owner: V1Pod) => Promise<T>): Promise<T> {
  await system.waitRuntimeReady(RUNTIME, 2);
  const owner = await system.assignedPod(RUN);
  const group = containerGroup(owner, 'runtime-server');
  process.kill(-group, 'SIGSTOP');
  try {
    return await during(owner);
  } finally {
    process.kill(-group, 'SIGCONT');
  }
}

async function otherReadyPod(owner: V1Pod): Promise<V1Pod> {
  const pods = (await system.core.listNamespacedPod({ namespace: system.name, labelSelector: podLabelSelector(RUNTIME) })).items;
  const other = pods.find((pod) => pod.metadata?.uid !== owner.metadata?.uid && pod.status?.podIP !== undefined);
  if (other === undefined) throw new Error('no second Pod');
  return other;
}

const uidOf = (run: Run): string => run.metadata.uid ?? '';
const grpcAddress = (ip: string): string => `${ip}:${String(DEFAULTS.runtimedGrpcPort)}`;
const failureOf = (result: ForwardResult): { code: string; message: string } | 'OK' =>
  result.ok ? 'OK' : { code: result.error.code, message: result.error.message };

test('a forwarded call to a hung Runtime Server: the owner says InvocationTimeout and why, through the receiving runtimed', async () => {
  const run = await system.getRun(RUN);
  const result = await withOwnerServerHung(async (owner) => {
    // A hint naming the Pod that is not the owner: the gateway's forwarder dials it, and it takes the one peer hop.
    const other = await otherReadyPod(owner);
    hints.remember(hintKey(system.name, RUNTIME, uidOf(run)), { ip: other.status?.podIP ?? '', attempt: run.status?.attempt ?? 1 });
    const answer = await forwarder.forward({
      namespace: system.name,
      runtime: RUNTIME,
      uid: uidOf(run),
      invocationId: 'hung-forwarded',
      payload: Buffer.from('{"n":1}'),
      timeoutMs: TIMEOUT_MS,
      token: system.token('alice'),
      signal: new AbortController().signal,
    });
    expect(answer.upstream).toBe(grpcAddress(other.status?.podIP ?? ''));
    return answer;
  });
  expect(failureOf(result)).toEqual({ code: 'InvocationTimeout', message: CAUSE });
}, 120_000);

test('through the gateway process: 504 InvocationTimeout whose message names the hung Runtime Server', async () => {
  const run = await system.getRun(RUN);
  const answer = await withOwnerServerHung(() =>
    system.invoke({
      runtime: RUNTIME,
      uid: uidOf(run),
      token: system.token('alice'),
      body: '{"n":2}',
      headers: { [TIMEOUT_HEADER]: String(TIMEOUT_MS / 1000) },
    }),
  );
  expect({ status: answer.status, error: (answer.json as { error?: unknown }).error }).toEqual({
    status: 504,
    error: { code: 'InvocationTimeout', source: 'platform', message: CAUSE },
  });
}, 120_000);
