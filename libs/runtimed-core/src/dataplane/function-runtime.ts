import { setTimeout as sleep } from 'node:timers/promises';
import { RUNTIMED_LOG_MESSAGES, invocationDeadlineMs, truncateUtf8 } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { bearerToken } from '@kruntimes/authz';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { ERROR_CODES, KruntimesError, isKruntimesError } from '@kruntimes/errors';
import { METADATA_KEYS, millisFromDuration } from '@kruntimes/proto';
import type { runtimeServerV1, runtimedV1 } from '@kruntimes/proto';
import { ServerError, Status } from 'nice-grpc';
import type { CallContext } from 'nice-grpc';
import type { Logger } from 'pino';
import { ATTR, SpanKind, endFailed, parentOf, remoteParent, startSpan, traceHeaders } from '@kruntimes/tracing';
import type { Span, Tracer } from '@kruntimes/tracing';
import type { RuntimedMetrics } from '../metrics.ts';
import type { PeerPod } from '../peer-pods.ts';
import { RuntimeServerError } from '../runtime-server.ts';
import type { RuntimeServerClient } from '../runtime-server.ts';
import type { PeerForwarder } from './peer-forwarder.ts';
import type { Registrations } from './registrations.ts';
import { validateInvocation } from './request.ts';
import type { DataplanePort, IncomingInvocation } from './request.ts';
import { invocationErrorCode, routeInvocation } from './route.ts';
import type { Route } from './route.ts';

export interface Authorizer {
  authorize(request: { token: string; namespace: string; name: string; uid: string }): Promise<void>;
}

export interface FunctionRuntimeOptions {
  /** This Pod; `podIP` is what an answer names as the owner when it was served here. */
  self: { namespace: string; runtime: string; podName: string; podUID: string; podIP: string };
  /** Whether the Run and Pod caches hold a complete list (before that, a miss proves nothing). */
  synced(): boolean;
  /** The current cached Run with this UID (informer only). */
  runByUid(uid: string): ReadonlyDeep<Run> | undefined;
  /** The cached Pod with this UID (informer only). */
  podByUid(uid: string): PeerPod | undefined;
  registrations: Registrations;
  server: RuntimeServerClient;
  authorizer: Authorizer;
  forwarder: PeerForwarder;
  /** Called (off the request path) when the owner was found stale or unreachable. */
  ownerUnreachable(run: { name: string; uid: string }, message: string): void;
  metrics: RuntimedMetrics;
  logger: Logger;
  /**
   * Tracing on: a server span per call, a client span per call to the Runtime Server or
   * to the owner. Undefined: no span is made, not even a no-op one.
   */
  tracer?: Tracer;
  /** How long a possibly lagging cache is given before the answer is final. */
  recheckWaitMs?: number;
  recheckIntervalMs?: number;
}

/** A status message stays readable in a log line and far below header limits. */
const STATUS_MESSAGE_BYTES = 4 * 1024;
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
  /** The call's server span (tracing on). */
  span?: Span;
  /** The error the call ended with, once it did. */
  failed?: KruntimesError;
}

const INVOKE_RPC = 'kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction';
const RUNTIME_SERVER_INVOKE_RPC = 'kruntimes.runtimeserver.v1.RuntimeServer/InvokeFunction';

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
    // Every line of the invocation names its Runtime (this runtimed's own), Run and, once valid, its ID.
    fields: { namespace: o.self.namespace, runtime: o.self.runtime, port, runUID: request.runUid.slice(0, 64) },
    validId: false,
  };
  if (o.tracer !== undefined) call.span = serverSpan(o.tracer, call);
  try {
    const response = await serve(call);
    call.span?.end();
    return response;
  } catch (error) {
    const answer = failure(call, error);
    if (call.span !== undefined) {
      const { code, message } = call.failed ?? { code: 'Internal', message: 'the caller went away' };
      endFailed(call.span, code, message);
    }
    throw answer;
  }
}

/** The call's server span, under the caller's trace context (the gateway's or the forwarding runtimed's client span). */
function serverSpan(tracer: Tracer, call: InvokeCall): Span {
  const { metadata } = call.context;
  return startSpan(tracer, INVOKE_RPC, SpanKind.SERVER, remoteParent(metadata.get('traceparent'), metadata.get('tracestate')), {
    'rpc.system': 'grpc',
    'rpc.service': 'kruntimes.runtimed.v1.FunctionRuntime',
    'rpc.method': 'InvokeFunction',
    [ATTR.port]: call.port,
    [ATTR.invocationId]: call.request.invocationId.slice(0, 128),
    [ATTR.namespace]: call.o.self.namespace,
    [ATTR.runtime]: call.o.self.runtime,
    [ATTR.runUid]: call.request.runUid.slice(0, 64),
  });
}

/** A client span under the call's server span, and the trace context the next hop gets from it. */
function clientSpan(call: InvokeCall, name: string, attributes: Record<string, string | number>): Span | undefined {
  if (call.span === undefined || call.o.tracer === undefined) return undefined;
  return startSpan(call.o.tracer, name, SpanKind.CLIENT, parentOf(call.span), {
    [ATTR.invocationId]: call.incoming.invocationId,
    ...attributes,
  });
}

/** Ends a client span with how the awaited call ended. */
async function traced<T>(span: Span | undefined, calling: Promise<T>): Promise<T> {
  if (span === undefined) return calling;
  try {
    const result = await calling;
    span.end();
    return result;
  } catch (error) {
    endFailed(span, isKruntimesError(error) ? error.code : 'Internal', error instanceof Error ? error.message : String(error));
    throw error;
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
  if (decided.type !== 'refuse' && port === 'grpc') nameOwner(call, decided);
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

/**
 * The owner this call is served by or forwarded to, in the trailers (sent with success or
 * failure): the gateway's hint to dial that Pod's runtimed next time ("Owner affinity" in
 * docs/invoke-contract.md). A Pod address and the attempt, nothing secret; the gateway
 * dials it only when it is among the Runtime's ready endpoints, and the owner still checks
 * everything. Only on the gRPC port: a peer hop's answer goes back to a runtimed.
 */
function nameOwner(call: InvokeCall, decided: Extract<Route, { type: 'invoke' | 'forward' }>): void {
  const ip = decided.type === 'invoke' ? call.o.self.podIP : decided.owner.ip;
  if (ip === '') return;
  call.context.trailer.set(METADATA_KEYS.ownerAddress, ip);
  call.context.trailer.set(METADATA_KEYS.ownerEpoch, String(decided.attempt));
}

async function invokeHere(
  call: InvokeCall,
  decided: Extract<Route, { type: 'invoke' }>,
  cachedName: string | undefined,
): Promise<runtimedV1.InvokeFunctionResponse> {
  const { o, incoming } = call;
  call.fields.attempt = decided.attempt;
  // Per-function metrics count what the owner serves (a forwarded call is counted by its owner).
  const run = o.runByUid(incoming.runUid)?.metadata.name ?? cachedName ?? '';
  const admitted = o.registrations.admitInvocation(incoming.runUid, decided.attempt);
  // 503 with Retry-After at the gateway: the next attempt registers on another Pod in a moment.
  if (admitted === undefined) {
    throw new KruntimesError('RunNotReady', `Run ${run} is moving: Pod ${o.self.podName} is stopping and hands it over to another Pod`);
  }
  try {
    return await invokeAdmitted(call, decided, run);
  } finally {
    admitted();
  }
}

async function invokeAdmitted(
  call: InvokeCall,
  decided: Extract<Route, { type: 'invoke' }>,
  run: string,
): Promise<runtimedV1.InvokeFunctionResponse> {
  const { o, incoming, context } = call;
  call.span?.setAttributes({ [ATTR.runName]: run, [ATTR.attempt]: decided.attempt, [ATTR.route]: 'local' });
  const ended = o.metrics.functions.invocationStarted({ namespace: o.self.namespace, runtime: o.self.runtime, run });
  let response: runtimeServerV1.InvokeFunctionResponse;
  try {
    const span = clientSpan(call, RUNTIME_SERVER_INVOKE_RPC, {
      'rpc.system': 'grpc',
      'rpc.service': 'kruntimes.runtimeserver.v1.RuntimeServer',
      'rpc.method': 'InvokeFunction',
      [ATTR.attempt]: decided.attempt,
    });
    response = await traced(span, invokeLocally(o, incoming, decided.registrationId, decided.timeoutMs, context.signal, span));
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
  call.span?.setAttributes({ [ATTR.attempt]: decided.attempt, [ATTR.route]: 'forwarded', 'kruntimes.runtimed.owner': decided.owner.name });
  const span = clientSpan(call, INVOKE_RPC, {
    'rpc.system': 'grpc',
    'rpc.service': 'kruntimes.runtimed.v1.FunctionRuntime',
    'rpc.method': 'InvokeFunction',
    'server.address': decided.owner.ip,
    [ATTR.attempt]: decided.attempt,
  });
  // With tracing on the owner gets the hop's client span as its parent, not the caller's context.
  const trace =
    span === undefined
      ? { traceparent: context.metadata.get('traceparent'), tracestate: context.metadata.get('tracestate') }
      : traceHeaders(span);
  const hop: runtimedV1.PeerHop = { expectedAttempt: decided.attempt, expectedPodUid: decided.owner.uid, fromPod: o.self.podName };
  const response = await traced(
    span,
    o.forwarder.forward(
      decided.owner.ip,
      { ...request, peerHop: hop },
      { authorization: authorization ?? '', ...trace },
      invocationDeadlineMs('peerHop', decided.timeoutMs),
      context.signal,
    ),
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
  call.failed = typed;
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
      registrations: o.registrations,
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
  span: Span | undefined,
): Promise<runtimeServerV1.InvokeFunctionResponse> {
  const request = { registrationId, invocationId: incoming.invocationId, payload: incoming.payload, timeoutMs };
  try {
    return await o.server.invoke(span === undefined ? request : { ...request, ...traceHeaders(span) }, signal);
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
