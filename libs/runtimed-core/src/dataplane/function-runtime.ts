import { setTimeout as sleep } from 'node:timers/promises';
import { RUNTIMED_LOG_MESSAGES, truncateUtf8 } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { ERROR_CODES, KruntimesError, isKruntimesError } from '@kruntimes/errors';
import { METADATA_KEYS, millisFromDuration } from '@kruntimes/proto';
import type { runtimeServerV1, runtimedV1 } from '@kruntimes/proto';
import { ServerError, Status } from 'nice-grpc';
import type { CallContext } from 'nice-grpc';
import type { Logger } from 'pino';
import type { RuntimedMetrics } from '../metrics.ts';
import type { PeerPod } from '../peer-pods.ts';
import { RuntimeServerError } from '../runtime-server.ts';
import type { RuntimeServerClient } from '../runtime-server.ts';
import type { PeerForwarder } from './peer-forwarder.ts';
import { bearerToken, validateInvocation } from './request.ts';
import type { DataplanePort, IncomingInvocation } from './request.ts';
import { invocationErrorCode, routeInvocation } from './route.ts';
import type { Route } from './route.ts';

export interface Authorizer {
  authorize(request: { token: string; namespace: string; name: string; uid: string }): Promise<void>;
}

export interface FunctionRuntimeOptions {
  self: { namespace: string; runtime: string; podName: string; podUID: string };
  /** Whether the Run and Pod caches hold a complete list (before that, a miss proves nothing). */
  synced(): boolean;
  /** The current cached Run with this UID (informer only). */
  runByUid(uid: string): ReadonlyDeep<Run> | undefined;
  /** The cached Pod with this UID (informer only). */
  podByUid(uid: string): PeerPod | undefined;
  /** The registration this runtimed holds for (Run UID, attempt). */
  registrationFor(uid: string, attempt: number): string | undefined;
  server: RuntimeServerClient;
  authorizer: Authorizer;
  forwarder: PeerForwarder;
  /** Called (off the request path) when the owner was found stale or unreachable. */
  ownerUnreachable(run: { name: string; uid: string }, message: string): void;
  metrics: RuntimedMetrics;
  logger: Logger;
  /** How long a possibly lagging cache is given before the answer is final. */
  recheckWaitMs?: number;
  recheckIntervalMs?: number;
}

/** A status message stays readable in a log line and far below header limits. */
const STATUS_MESSAGE_BYTES = 4 * 1024;
/** Past the invocation's timeout, how long a hop waits for the owner's own answer. */
const FORWARD_DEADLINE_MARGIN_MS = 10_000;
const DEFAULT_RECHECK_WAIT_MS = 1_000;
const DEFAULT_RECHECK_INTERVAL_MS = 100;

/**
 * FunctionRuntime.InvokeFunction for one port (docs/invoke-contract.md): validate, authorize the
 * caller's token (SelfSubjectAccessReview, cached), route from the informer caches only,
 * then invoke the local Runtime Server or forward once to the owner. Every failure ends
 * with the status of the error table and the krt-error-code / krt-error-source /
 * krt-invocation-id trailers.
 */
export function functionRuntimeService(
  options: FunctionRuntimeOptions,
  port: DataplanePort,
): runtimedV1.FunctionRuntimeServiceImplementation {
  return {
    invokeFunction: (request, context) => invoke(options, port, request, context),
  };
}

/** One InvokeFunction call; what the failure path needs is kept as the call goes on. */
interface InvokeCall {
  o: FunctionRuntimeOptions;
  port: DataplanePort;
  request: runtimedV1.InvokeFunctionRequest;
  context: CallContext;
  incoming: IncomingInvocation;
  started: number;
  /**
   * What the call's log line says about it, added as it goes. One object, not a pino
   * child logger per step: children serialise their bindings each time they are made.
   */
  fields: Record<string, unknown>;
  /** Where the call was routed, once it was. */
  route?: Route['type'];
  /** Whether the invocation ID passed validation (only then is it echoed in a trailer). */
  validId: boolean;
}

async function invoke(
  o: FunctionRuntimeOptions,
  port: DataplanePort,
  request: runtimedV1.InvokeFunctionRequest,
  context: CallContext,
): Promise<runtimedV1.InvokeFunctionResponse> {
  const call: InvokeCall = {
    o,
    port,
    request,
    context,
    started: performance.now(),
    incoming: {
      namespace: request.namespace,
      runtime: request.runtime,
      runUid: request.runUid,
      invocationId: request.invocationId,
      payload: request.payload,
      timeoutMs: millisFromDuration(request.timeout),
      peerHop: request.peerHop,
    },
    fields: { port, runUID: request.runUid.slice(0, 64) },
    validId: false,
  };
  try {
    return await serve(call);
  } catch (error) {
    throw failure(call, error);
  }
}

/** Validate, authorize, route, then invoke here or forward. */
async function serve(call: InvokeCall): Promise<runtimedV1.InvokeFunctionResponse> {
  const { o, port, context, incoming } = call;
  validateInvocation(incoming, o.self, port);
  call.validId = true;
  call.fields.invocationId = incoming.invocationId;
  if (incoming.peerHop !== undefined) call.fields.fromPod = incoming.peerHop.fromPod;
  const authorization = context.metadata.get(METADATA_KEYS.authorization);
  const token = bearerToken(authorization);
  // A cache that is still listing would answer 404 for a Run that exists.
  if (!o.synced()) throw new KruntimesError('RunNotReady', 'this runtimed is starting (its caches are not synced yet)');
  const cached = o.runByUid(incoming.runUid);
  // An unknown UID has no name: the review then asks about the namespace's Runs in
  // general, so that only a caller who may read Runs there learns it does not exist.
  await o.authorizer.authorize({ token, namespace: o.self.namespace, name: cached?.metadata.name ?? '', uid: incoming.runUid });
  const decided = await decide(o, incoming, context.signal);
  call.route = decided.type;
  switch (decided.type) {
    case 'refuse': {
      if (decided.ownerUnreachable && cached !== undefined)
        o.ownerUnreachable({ name: cached.metadata.name ?? '', uid: incoming.runUid }, decided.message);
      throw new KruntimesError(decided.code, decided.message);
    }
    case 'invoke':
      return invokeHere(call, decided, cached?.metadata.name);
    case 'forward':
      return forwardToOwner(call, decided, authorization);
  }
}

async function invokeHere(
  call: InvokeCall,
  decided: Extract<Route, { type: 'invoke' }>,
  cachedName: string | undefined,
): Promise<runtimedV1.InvokeFunctionResponse> {
  const { o, incoming, context } = call;
  call.fields.attempt = decided.attempt;
  // Per-function metrics count what the owner serves (a forwarded call is counted by its owner).
  const run = o.runByUid(incoming.runUid)?.metadata.name ?? cachedName ?? '';
  const ended = o.metrics.functions.invocationStarted({ namespace: o.self.namespace, runtime: o.self.runtime, run });
  let response: runtimeServerV1.InvokeFunctionResponse;
  try {
    response = await invokeLocally(o, incoming, decided.registrationId, decided.timeoutMs, context.signal);
  } catch (error) {
    ended(isKruntimesError(error) ? error.code : 'Internal');
    throw error;
  }
  ended('OK');
  finish(call, 'local', 'OK', { registrationId: decided.registrationId });
  return {
    invocationId: response.invocationId,
    result: response.result,
    outputs: response.outputs,
    stdout: response.stdout,
    stderr: response.stderr,
    attempt: decided.attempt,
  };
}

/** The one hop to the owner, which answers for itself (its status and trailers pass through). */
async function forwardToOwner(
  call: InvokeCall,
  decided: Extract<Route, { type: 'forward' }>,
  authorization: string | undefined,
): Promise<runtimedV1.InvokeFunctionResponse> {
  const { o, request, context } = call;
  call.fields.attempt = decided.attempt;
  call.fields.owner = decided.owner.name;
  const hop: runtimedV1.PeerHop = { expectedAttempt: decided.attempt, expectedPodUid: decided.owner.uid, fromPod: o.self.podName };
  const response = await o.forwarder.forward(
    decided.owner.ip,
    { ...request, peerHop: hop },
    {
      authorization: authorization ?? '',
      traceparent: context.metadata.get('traceparent'),
      tracestate: context.metadata.get('tracestate'),
    },
    decided.timeoutMs + FORWARD_DEADLINE_MARGIN_MS,
    context.signal,
  );
  finish(call, 'forwarded', 'OK', {});
  return response;
}

/** What the call ends with after an error: the status of the error table and its trailers. */
function failure(call: InvokeCall, error: unknown): unknown {
  const { context, o, fields, route } = call;
  // The caller went away: nobody is listening for a status.
  if (context.signal.aborted) return error;
  let typed: KruntimesError;
  if (isKruntimesError(error)) {
    typed = error;
  } else {
    o.logger.error({ ...fields, err: error }, 'unexpected error in the invoke path');
    typed = new KruntimesError('Internal', 'internal error');
  }
  finish(call, route === 'forward' ? 'forwarded' : route === 'invoke' ? 'local' : 'refused', typed.code, { err: typed.message });
  context.trailer.set(METADATA_KEYS.errorCode, typed.code);
  context.trailer.set(METADATA_KEYS.errorSource, typed.source);
  if (call.validId) context.trailer.set(METADATA_KEYS.invocationId, call.incoming.invocationId);
  return new ServerError(Status[ERROR_CODES[typed.code].grpc], truncateUtf8(typed.message, STATUS_MESSAGE_BYTES).value);
}

/**
 * Routes from the caches; a decision that may only reflect a lagging watch is looked at
 * again every recheckIntervalMs for at most recheckWaitMs, then taken as final.
 */
async function decide(
  o: FunctionRuntimeOptions,
  incoming: IncomingInvocation,
  signal: AbortSignal,
): Promise<Exclude<Route, { type: 'recheck' }>> {
  const deadline = performance.now() + (o.recheckWaitMs ?? DEFAULT_RECHECK_WAIT_MS);
  for (;;) {
    const final = performance.now() >= deadline;
    const run = o.runByUid(incoming.runUid);
    const assigned = run?.status?.assignedPodUID;
    const route = routeInvocation({
      self: { podUID: o.self.podUID, runtime: o.self.runtime },
      runUid: incoming.runUid,
      peerHop: incoming.peerHop,
      run,
      registrationFor: (attempt) => o.registrationFor(incoming.runUid, attempt),
      // Only another Pod is looked up (a scan of the Pod cache): routing to this one never reads it.
      ownerPod: assigned === undefined || assigned === '' || assigned === o.self.podUID ? undefined : o.podByUid(assigned),
      requestTimeoutMs: incoming.timeoutMs,
      final,
    });
    if (route.type !== 'recheck') return route;
    await sleep(o.recheckIntervalMs ?? DEFAULT_RECHECK_INTERVAL_MS, undefined, { signal });
  }
}

async function invokeLocally(
  o: FunctionRuntimeOptions,
  incoming: IncomingInvocation,
  registrationId: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<runtimeServerV1.InvokeFunctionResponse> {
  try {
    return await o.server.invoke({ registrationId, invocationId: incoming.invocationId, payload: incoming.payload, timeoutMs }, signal);
  } catch (error) {
    if (error instanceof RuntimeServerError)
      throw new KruntimesError(invocationErrorCode(error.code, error.answered), error.message, { cause: error });
    throw error;
  }
}

function finish(
  { o, port, fields, started }: InvokeCall,
  route: 'local' | 'forwarded' | 'refused',
  code: string,
  extra: Record<string, unknown>,
): void {
  o.metrics.invocation({ port, route, code });
  o.logger.info(
    { ...fields, route, code, durationMs: Math.round(performance.now() - started), ...extra },
    code === 'OK' ? RUNTIMED_LOG_MESSAGES.invocationServed : RUNTIMED_LOG_MESSAGES.invocationFailed,
  );
}
