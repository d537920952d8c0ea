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
import type { RuntimeServerClient, RuntimeServerInvocation } from '../runtime-server.ts';
import type { ForwardedInvocation, PeerForwarder } from './peer-forwarder.ts';
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

/**
 * One InvokeFunction call as far as it got: each step builds the next value from the last
 * one, and the failure path answers with the last one reached.
 */
interface InvokeCall {
  readonly options: FunctionRuntimeOptions;
  readonly port: DataplanePort;
  readonly request: runtimedV1.InvokeFunctionRequest;
  readonly context: CallContext;
  readonly incoming: IncomingInvocation;
  readonly started: number;
  /**
   * What the call's log line says about it, grown step by step. One object, not a pino
   * child logger per step: children serialise their bindings each time they are made.
   */
  readonly fields: Readonly<Record<string, unknown>>;
  /** Whether the invocation ID passed validation (only then is it echoed in a trailer). */
  readonly validId: boolean;
  /** Where the call was routed, once it was. */
  readonly route: Route['type'] | undefined;
  /** The call's server span (tracing on). */
  readonly span: Span | undefined;
}

/** A call routed from the caches: where it goes, and what the refusal or the hop needs. */
interface RoutedCall extends InvokeCall {
  readonly decided: Exclude<Route, { type: 'recheck' }>;
  /** The Run cached when the call was authorized, if any. */
  readonly cached: ReadonlyDeep<Run> | undefined;
  /** The caller's Authorization metadata, carried on by a forward. */
  readonly authorization: string | undefined;
}

const INVOKE_RPC = 'kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction';
const RUNTIME_SERVER_INVOKE_RPC = 'kruntimes.runtimeserver.v1.RuntimeServer/InvokeFunction';

/** Validate, authorize, route, then invoke here or forward; any failure answers with the step the call reached. */
async function invoke(
  options: FunctionRuntimeOptions,
  port: DataplanePort,
  request: runtimedV1.InvokeFunctionRequest,
  context: CallContext,
): Promise<runtimedV1.InvokeFunctionResponse> {
  const arrived = arrivedCall(options, port, request, context);
  let reached: InvokeCall = arrived;
  try {
    const validated = validatedCall(arrived);
    reached = validated;
    const routed = await routedCall(validated);
    reached = routed;
    const response = await serve(routed);
    arrived.span?.end();
    return response;
  } catch (error) {
    const { answer, failed } = failure(reached, error);
    if (arrived.span !== undefined) {
      const { code, message } = failed ?? { code: 'Internal', message: 'the caller went away' };
      endFailed(arrived.span, code, message);
    }
    throw answer;
  }
}

function arrivedCall(
  options: FunctionRuntimeOptions,
  port: DataplanePort,
  request: runtimedV1.InvokeFunctionRequest,
  context: CallContext,
): InvokeCall {
  const { self, tracer } = options;
  return {
    options,
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
    fields: { namespace: self.namespace, runtime: self.runtime, port, runUID: request.runUid.slice(0, 64) },
    validId: false,
    route: undefined,
    span: tracer === undefined ? undefined : serverSpan(tracer, self, port, request, context),
  };
}

/** The call's server span, under the caller's trace context (the gateway's or the forwarding runtimed's client span). */
function serverSpan(
  tracer: Tracer,
  self: FunctionRuntimeOptions['self'],
  port: DataplanePort,
  request: runtimedV1.InvokeFunctionRequest,
  { metadata }: CallContext,
): Span {
  return startSpan(tracer, INVOKE_RPC, SpanKind.SERVER, remoteParent(metadata.get('traceparent'), metadata.get('tracestate')), {
    'rpc.system': 'grpc',
    'rpc.service': 'kruntimes.runtimed.v1.FunctionRuntime',
    'rpc.method': 'InvokeFunction',
    [ATTR.port]: port,
    [ATTR.invocationId]: request.invocationId.slice(0, 128),
    [ATTR.namespace]: self.namespace,
    [ATTR.runtime]: self.runtime,
    [ATTR.runUid]: request.runUid.slice(0, 64),
  });
}

/** A client span under the call's server span, and the trace context the next hop gets from it. */
function clientSpan(call: InvokeCall, name: string, attributes: Record<string, string | number>): Span | undefined {
  const { tracer } = call.options;
  if (call.span === undefined || tracer === undefined) return undefined;
  return startSpan(tracer, name, SpanKind.CLIENT, parentOf(call.span), {
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

/** The first step, before any credential is looked at (validateInvocation). */
function validatedCall(call: InvokeCall): InvokeCall {
  const { incoming } = call;
  validateInvocation(incoming, call.options.self, call.port);
  return {
    ...call,
    validId: true,
    fields: {
      ...call.fields,
      invocationId: incoming.invocationId,
      ...(incoming.peerHop === undefined ? {} : { fromPod: incoming.peerHop.fromPod }),
    },
  };
}

/** Authorize the caller's token, then route from the caches. */
async function routedCall(call: InvokeCall): Promise<RoutedCall> {
  const { options, context, incoming } = call;
  const authorization = context.metadata.get(METADATA_KEYS.authorization);
  const token = bearerToken(authorization);
  // A cache that is still listing would answer 404 for a Run that exists.
  if (!options.synced()) throw new KruntimesError('RunNotReady', 'this runtimed is starting (its caches are not synced yet)');
  const cached = options.runByUid(incoming.runUid);
  // An unknown UID has no name: the review then asks about the namespace's Runs in
  // general, so that only a caller who may read Runs there learns it does not exist.
  await options.authorizer.authorize({ token, namespace: options.self.namespace, name: cached?.metadata.name ?? '', uid: incoming.runUid });
  const decided = await decide(options, incoming, context.signal);
  const fields =
    decided.type === 'refuse'
      ? call.fields
      : { ...call.fields, attempt: decided.attempt, ...(decided.type === 'forward' ? { owner: decided.owner.name } : {}) };
  return { ...call, fields, route: decided.type, decided, cached, authorization };
}

/** A routed call's answer: refused, invoked here, or the owner's. */
async function serve(call: RoutedCall): Promise<runtimedV1.InvokeFunctionResponse> {
  const { decided } = call;
  if (decided.type !== 'refuse' && call.port === 'grpc') nameOwner(call, decided);
  switch (decided.type) {
    case 'refuse': {
      if (decided.ownerUnreachable && call.cached !== undefined)
        call.options.ownerUnreachable({ name: call.cached.metadata.name ?? '', uid: call.incoming.runUid }, decided.message);
      throw new KruntimesError(decided.code, decided.message);
    }
    case 'invoke':
      return invokeHere(call, decided);
    case 'forward':
      return forwardToOwner(call, decided);
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
  const ip = decided.type === 'invoke' ? call.options.self.podIP : decided.owner.ip;
  if (ip === '') return;
  call.context.trailer.set(METADATA_KEYS.ownerAddress, ip);
  call.context.trailer.set(METADATA_KEYS.ownerEpoch, String(decided.attempt));
}

async function invokeHere(call: RoutedCall, decided: Extract<Route, { type: 'invoke' }>): Promise<runtimedV1.InvokeFunctionResponse> {
  const { options, incoming } = call;
  // Per-function metrics count what the owner serves (a forwarded call is counted by its owner).
  const run = options.runByUid(incoming.runUid)?.metadata.name ?? call.cached?.metadata.name ?? '';
  const admitted = options.registrations.admitInvocation(incoming.runUid, decided.attempt);
  // 503 with Retry-After at the gateway: the next attempt registers on another Pod in a moment.
  if (admitted === undefined) {
    throw new KruntimesError(
      'RunNotReady',
      `Run ${run} is moving: Pod ${options.self.podName} is stopping and hands it over to another Pod`,
    );
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
  const { options, incoming, context } = call;
  call.span?.setAttributes({ [ATTR.runName]: run, [ATTR.attempt]: decided.attempt, [ATTR.route]: 'local' });
  const ended = options.metrics.functions.invocationStarted({ namespace: options.self.namespace, runtime: options.self.runtime, run });
  let response: runtimeServerV1.InvokeFunctionResponse;
  try {
    const span = clientSpan(call, RUNTIME_SERVER_INVOKE_RPC, {
      'rpc.system': 'grpc',
      'rpc.service': 'kruntimes.runtimeserver.v1.RuntimeServer',
      'rpc.method': 'InvokeFunction',
      [ATTR.attempt]: decided.attempt,
    });
    const invocation = runtimeServerInvocation(incoming, decided, span);
    response = await traced(span, invokeLocally(options.server, invocation, context.signal));
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
async function forwardToOwner(call: RoutedCall, decided: Extract<Route, { type: 'forward' }>): Promise<runtimedV1.InvokeFunctionResponse> {
  const { options, context } = call;
  call.span?.setAttributes({ [ATTR.attempt]: decided.attempt, [ATTR.route]: 'forwarded', 'kruntimes.runtimed.owner': decided.owner.name });
  const span = clientSpan(call, INVOKE_RPC, {
    'rpc.system': 'grpc',
    'rpc.service': 'kruntimes.runtimed.v1.FunctionRuntime',
    'rpc.method': 'InvokeFunction',
    'server.address': decided.owner.ip,
    [ATTR.attempt]: decided.attempt,
  });
  const response = await traced(span, options.forwarder.forward(forwardedInvocation(call, decided, span), context.signal));
  finish(call, 'forwarded', 'OK', {});
  return response;
}

/** The request as the owner gets it: the caller's, naming the epoch expected there, with the caller's credential. */
function forwardedInvocation(call: RoutedCall, decided: Extract<Route, { type: 'forward' }>, span: Span | undefined): ForwardedInvocation {
  const { metadata } = call.context;
  // With tracing on the owner gets the hop's client span as its parent, not the caller's context.
  const trace =
    span === undefined ? { traceparent: metadata.get('traceparent'), tracestate: metadata.get('tracestate') } : traceHeaders(span);
  return {
    ownerIp: decided.owner.ip,
    request: {
      ...call.request,
      peerHop: { expectedAttempt: decided.attempt, expectedPodUid: decided.owner.uid, fromPod: call.options.self.podName },
    },
    metadata: { authorization: call.authorization ?? '', ...trace },
    deadlineMs: invocationDeadlineMs('peerHop', decided.timeoutMs),
  };
}

/** What the call ends with after an error (the status of the error table and its trailers), and the typed error, if answered. */
function failure(call: InvokeCall, error: unknown): { answer: unknown; failed: KruntimesError | undefined } {
  const { context, options, fields, route } = call;
  // The caller went away: nobody is listening for a status.
  if (context.signal.aborted) return { answer: error, failed: undefined };
  let typed: KruntimesError;
  if (isKruntimesError(error)) {
    typed = error;
  } else {
    options.logger.error({ ...fields, err: error }, 'unexpected error in the invoke path');
    typed = new KruntimesError('Internal', 'internal error');
  }
  finish(call, route === 'forward' ? 'forwarded' : route === 'invoke' ? 'local' : 'refused', typed.code, { err: typed.message });
  context.trailer.set(METADATA_KEYS.errorCode, typed.code);
  context.trailer.set(METADATA_KEYS.errorSource, typed.source);
  if (call.validId) context.trailer.set(METADATA_KEYS.invocationId, call.incoming.invocationId);
  return {
    answer: new ServerError(Status[ERROR_CODES[typed.code].grpc], truncateUtf8(typed.message, STATUS_MESSAGE_BYTES).value),
    failed: typed,
  };
}

/**
 * Routes from the caches; a decision that may only reflect a lagging watch is looked at
 * again every recheckIntervalMs for at most recheckWaitMs, then taken as final.
 */
async function decide(
  options: FunctionRuntimeOptions,
  incoming: IncomingInvocation,
  signal: AbortSignal,
): Promise<Exclude<Route, { type: 'recheck' }>> {
  const { self } = options;
  const deadline = performance.now() + (options.recheckWaitMs ?? DEFAULT_RECHECK_WAIT_MS);
  for (;;) {
    const final = performance.now() >= deadline;
    const run = options.runByUid(incoming.runUid);
    const assigned = run?.status?.assignedPodUID;
    const route = routeInvocation({
      self: { podUID: self.podUID, runtime: self.runtime },
      runUid: incoming.runUid,
      peerHop: incoming.peerHop,
      run,
      registrations: options.registrations,
      // Only another Pod is looked up (a scan of the Pod cache): routing to this one never reads it.
      ownerPod: assigned === undefined || assigned === '' || assigned === self.podUID ? undefined : options.podByUid(assigned),
      requestTimeoutMs: incoming.timeoutMs,
      final,
    });
    if (route.type !== 'recheck') return route;
    await sleep(options.recheckIntervalMs ?? DEFAULT_RECHECK_INTERVAL_MS, undefined, { signal });
  }
}

/** The call to the local Runtime Server, under the hop's client span (tracing on). */
function runtimeServerInvocation(
  incoming: IncomingInvocation,
  decided: Extract<Route, { type: 'invoke' }>,
  span: Span | undefined,
): RuntimeServerInvocation {
  const invocation = {
    registrationId: decided.registrationId,
    invocationId: incoming.invocationId,
    payload: incoming.payload,
    timeoutMs: decided.timeoutMs,
  };
  return span === undefined ? invocation : { ...invocation, ...traceHeaders(span) };
}

async function invokeLocally(
  server: RuntimeServerClient,
  invocation: RuntimeServerInvocation,
  signal: AbortSignal,
): Promise<runtimeServerV1.InvokeFunctionResponse> {
  try {
    return await server.invoke(invocation, signal);
  } catch (error) {
    if (error instanceof RuntimeServerError)
      throw new KruntimesError(invocationErrorCode(error.code, error.answered), error.message, { cause: error });
    throw error;
  }
}

function finish(
  { options, port, fields, started }: InvokeCall,
  route: 'local' | 'forwarded' | 'refused',
  code: string,
  extra: Record<string, unknown>,
): void {
  options.metrics.invocation({ port, route, code });
  options.logger.info(
    { ...fields, route, code, durationMs: Math.round(performance.now() - started), ...extra },
    code === 'OK' ? RUNTIMED_LOG_MESSAGES.invocationServed : RUNTIMED_LOG_MESSAGES.invocationFailed,
  );
}
