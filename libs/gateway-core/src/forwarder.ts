import { ChannelCredentials, connectivityState } from '@grpc/grpc-js';
import { invocationDeadlineMs } from '@kruntimes/api';
import type { Channel } from '@grpc/grpc-js';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { Logger } from 'pino';
import { METADATA_KEYS, durationFromMillis, runtimedV1 } from '@kruntimes/proto';
import { ATTR, SpanKind, endFailed, parentOf, startSpan, traceHeaders } from '@kruntimes/tracing';
import type { Span, Tracer } from '@kruntimes/tracing';
import { httpErrorOf, httpErrorOfGrpcFailure } from './error-mapping.ts';
import type { HttpError } from './error-mapping.ts';
import { OwnerHints, hintKey, parseNamedOwner } from './owner-hints.ts';
import type { NamedOwner } from './owner-hints.ts';
import { runtimedServerName } from './resolver.ts';
import type { UpstreamResolver } from './resolver.ts';

type FunctionRuntimeClient = runtimedV1.FunctionRuntimeClient;

export interface ForwardRequest {
  namespace: string;
  runtime: string;
  uid: string;
  invocationId: string;
  payload: Buffer;
  timeoutMs: number;
  token: string;
  traceparent?: string;
  tracestate?: string;
  /**
   * The gateway's span of the request (tracing on): the call gets a client span under it,
   * and runtimed gets that span's context instead of the caller's `traceparent`.
   */
  span?: Span;
  /** Aborted when the HTTP client went away: the call is cancelled. */
  signal: AbortSignal;
}

export type ForwardResult =
  | { ok: true; response: runtimedV1.InvokeFunctionResponse; upstreamSeconds: number; upstream: string }
  | { ok: false; error: HttpError; upstreamSeconds: number | undefined; upstream: string | undefined };

export interface ForwarderOptions {
  resolver: UpstreamResolver;
  /** PEM of the internal CA that issued runtimed's certificates. */
  caPem: string;
  logger: Logger;
  /** Bound on connecting to one runtimed (TCP + TLS). Default 3 s. */
  connectTimeoutMs?: number;
  /** Cached channels (one per dialled address). Default 256. */
  maxChannels?: number;
  /** Makes the client span of each call whose request has a span (tracing on). */
  tracer?: Tracer;
  /** The owner hints per Run (owner-hints.ts); default a new store with its default bounds. */
  ownerHints?: OwnerHints;
}

/** The span name of the call, as the gRPC semantic conventions name it (`service/method`). */
const INVOKE_RPC = `${runtimedV1.FunctionRuntimeDefinition.fullName}/InvokeFunction`;

interface PooledChannel {
  channel: Channel;
  client: FunctionRuntimeClient;
  inflight: number;
  /** Requests that used it: 1 means it was made for the current one. */
  uses: number;
  retired: boolean;
}

/** Channels to runtimed, one per address and verified name, LRU-bounded. */
class ChannelPool {
  readonly #entries = new Map<string, PooledChannel>();
  readonly #max: number;
  #credentials: ChannelCredentials;

  constructor(caPem: string, max: number) {
    this.#credentials = ChannelCredentials.createSsl(Buffer.from(caPem));
    this.#max = max;
  }

  /** A new CA: new connections verify against it; channels in use finish their calls first. */
  setCa(caPem: string): void {
    this.#credentials = ChannelCredentials.createSsl(Buffer.from(caPem));
    for (const [key, entry] of this.#entries) this.#retire(key, entry);
  }

  acquire(address: string, serverName: string, fresh: boolean): PooledChannel {
    const key = `${address}|${serverName}`;
    let entry = this.#entries.get(key);
    if (entry !== undefined && fresh) {
      this.#retire(key, entry);
      entry = undefined;
    }
    if (entry === undefined) {
      const channel = createChannel(address, this.#credentials, {
        // runtimed's certificate names the Runtime's Service, whatever address is dialled.
        'grpc.ssl_target_name_override': serverName,
        'grpc.default_authority': serverName,
        'grpc.keepalive_time_ms': 30_000,
        'grpc.max_receive_message_length': 8 * 1024 * 1024,
        // grpc-js's per-call introspection counters, which nothing reads.
        'grpc.enable_channelz': 0,
      });
      entry = { channel, client: createClient(runtimedV1.FunctionRuntimeDefinition, channel), inflight: 0, uses: 0, retired: false };
      this.#evict();
    } else {
      // Re-insert: the Map's order is the LRU order.
      this.#entries.delete(key);
    }
    this.#entries.set(key, entry);
    entry.inflight += 1;
    entry.uses += 1;
    return entry;
  }

  release(entry: PooledChannel): void {
    entry.inflight -= 1;
    if (entry.retired && entry.inflight === 0) entry.channel.close();
  }

  close(): void {
    for (const [key, entry] of this.#entries) this.#retire(key, entry);
  }

  #retire(key: string, entry: PooledChannel): void {
    this.#entries.delete(key);
    entry.retired = true;
    if (entry.inflight === 0) entry.channel.close();
  }

  #evict(): void {
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size < this.#max) return;
      if (entry.inflight === 0) this.#retire(key, entry);
    }
  }
}

/** Whether the channel got connected (TCP and TLS) within the bound; false on a failure. */
function connect(channel: Channel, timeoutMs: number, signal: AbortSignal): Promise<boolean> | true {
  // The warm path: a connected channel needs no promise and no watch.
  if (channel.getConnectivityState(true) === connectivityState.READY) return true;
  return waitConnected(channel, timeoutMs, signal);
}

async function waitConnected(channel: Channel, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = channel.getConnectivityState(true);
    if (state === connectivityState.READY) return true;
    if (state === connectivityState.TRANSIENT_FAILURE || state === connectivityState.SHUTDOWN || signal.aborted) return false;
    const changed = await new Promise<boolean>((resolve) => {
      channel.watchConnectivityState(state, deadline, (error) => {
        resolve(error === undefined);
      });
    });
    if (!changed) return false;
  }
}

/**
 * Turns one invoke into one FunctionRuntime.InvokeFunction call. Never retried once it
 * may have been sent: the only retry is to the next address when the first could not
 * be connected to at all (nothing was sent on it).
 */
export class Forwarder {
  readonly #resolver: UpstreamResolver;
  readonly #pool: ChannelPool;
  readonly #logger: Logger;
  readonly #connectTimeoutMs: number;
  readonly #tracer: Tracer | undefined;
  readonly #hints: OwnerHints;

  constructor(options: ForwarderOptions) {
    this.#resolver = options.resolver;
    this.#hints = options.ownerHints ?? new OwnerHints();
    this.#tracer = options.tracer;
    this.#logger = options.logger;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
    this.#pool = new ChannelPool(options.caPem, options.maxChannels ?? 256);
  }

  setCa(caPem: string): void {
    this.#pool.setCa(caPem);
  }

  close(): void {
    this.#pool.close();
  }

  async forward(request: ForwardRequest): Promise<ForwardResult> {
    const addresses = await this.#resolver.resolve(request.namespace, request.runtime);
    if (addresses.length === 0) {
      return {
        ok: false,
        upstreamSeconds: undefined,
        upstream: undefined,
        error: httpErrorOf('RunNotReady', `no ready runtimed serves Runtime ${request.namespace}/${request.runtime}`),
      };
    }
    const serverName = runtimedServerName(request.namespace, request.runtime);
    const key = hintKey(request.namespace, request.runtime, request.uid);
    // The hinted owner first when it is one of the ready endpoints, else the balanced order.
    const choice = this.#hints.choose(key, addresses);
    const failed: string[] = [];
    for (const upstream of choice.upstreams) {
      let entry = this.#pool.acquire(upstream.address, serverName, false);
      try {
        const connected = connect(entry.channel, this.#connectTimeoutMs, request.signal);
        let ready = connected === true || (await connected);
        if (
          !ready &&
          entry.uses > 1 &&
          !request.signal.aborted &&
          entry.channel.getConnectivityState(false) === connectivityState.TRANSIENT_FAILURE
        ) {
          // A channel remembered in failure may only be backing off: one fresh dial.
          this.#pool.release(entry);
          entry = this.#pool.acquire(upstream.address, serverName, true);
          ready = await connect(entry.channel, this.#connectTimeoutMs, request.signal);
        }
        if (ready) {
          const { result, owner } = await this.#call(entry.client, request, upstream.address);
          const code = result.ok ? undefined : result.error.code;
          this.#hints.learn(key, { code, owner, hintedDialFailed: choice.hint === 'followed' && failed.length > 0 });
          return result;
        }
      } finally {
        this.#pool.release(entry);
      }
      if (request.signal.aborted) break;
      failed.push(upstream.address);
      this.#logger.warn(
        {
          upstream: upstream.address,
          pod: upstream.pod,
          invocationId: request.invocationId,
          hinted: choice.hint === 'followed' && failed.length === 1,
        },
        'could not connect to runtimed; nothing was sent',
      );
    }
    if (choice.hint === 'followed') this.#hints.learn(key, { code: undefined, owner: undefined, hintedDialFailed: true });
    return {
      ok: false,
      upstreamSeconds: undefined,
      upstream: failed.at(-1),
      error: httpErrorOf('OwnerUnavailable', `could not connect to runtimed of Runtime ${request.namespace}/${request.runtime}`),
    };
  }

  /** The one call, and the owner its trailers named (success or failure). */
  async #call(
    client: FunctionRuntimeClient,
    request: ForwardRequest,
    upstream: string,
  ): Promise<{ result: ForwardResult; owner: NamedOwner | undefined }> {
    // runtimed answers InvocationTimeout itself (or its peer hop OwnerUnavailable) before this fires.
    const deadlineMs = invocationDeadlineMs('gateway', request.timeoutMs);
    // One controller for both ends of the call (the deadline, the client gone): cheaper
    // than AbortSignal.any of two signals per request.
    const abort = new AbortController();
    let deadlineExceeded = false;
    const timer = setTimeout(() => {
      deadlineExceeded = true;
      abort.abort();
    }, deadlineMs);
    const onClientGone = (): void => {
      abort.abort();
    };
    if (request.signal.aborted) abort.abort();
    else request.signal.addEventListener('abort', onClientGone, { once: true });
    let trailer: Metadata | undefined;
    const span =
      request.span === undefined || this.#tracer === undefined ? undefined : clientSpan(this.#tracer, request.span, request, upstream);
    const started = performance.now();
    try {
      const response = await client.invokeFunction(
        {
          namespace: request.namespace,
          runtime: request.runtime,
          runUid: request.uid,
          invocationId: request.invocationId,
          payload: request.payload,
          timeout: durationFromMillis(request.timeoutMs),
          peerHop: undefined,
        },
        {
          metadata: invocationMetadata(request, span),
          signal: abort.signal,
          onTrailer: (received) => {
            trailer = received;
          },
        },
      );
      span?.end();
      return { result: { ok: true, response, upstreamSeconds: (performance.now() - started) / 1000, upstream }, owner: ownerOf(trailer) };
    } catch (error) {
      const failure = callFailure(error, trailer, {
        deadlineMs,
        deadlineExceeded,
        clientGone: request.signal.aborted,
      });
      if (span !== undefined) endFailed(span, failure?.code ?? 'Internal', failure?.message ?? String(error));
      if (failure === undefined) throw error;
      return {
        result: { ok: false, upstreamSeconds: (performance.now() - started) / 1000, upstream, error: failure },
        owner: ownerOf(trailer),
      };
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onClientGone);
    }
  }
}

/** The owner runtimed's trailers named, if they did (validated: an IP and an attempt). */
function ownerOf(trailer: Metadata | undefined): NamedOwner | undefined {
  const text = (key: string): string | undefined => {
    const value = trailer?.get(key);
    return typeof value === 'string' ? value : undefined;
  };
  return parseNamedOwner(text(METADATA_KEYS.ownerAddress), text(METADATA_KEYS.ownerEpoch));
}

function clientSpan(tracer: Tracer, parent: Span, request: ForwardRequest, upstream: string): Span {
  return startSpan(tracer, INVOKE_RPC, SpanKind.CLIENT, parentOf(parent), {
    'rpc.system': 'grpc',
    'rpc.service': runtimedV1.FunctionRuntimeDefinition.fullName,
    'rpc.method': 'InvokeFunction',
    'server.address': upstream,
    [ATTR.invocationId]: request.invocationId,
    [ATTR.namespace]: request.namespace,
    [ATTR.runtime]: request.runtime,
    [ATTR.runUid]: request.uid,
  });
}

/**
 * The caller's token and trace context, as gRPC metadata of the call: with tracing on,
 * the client span's context replaces the caller's (one traceparent, never both).
 */
function invocationMetadata(request: ForwardRequest, span: Span | undefined): Metadata {
  const metadata = Metadata();
  metadata.set(METADATA_KEYS.authorization, `Bearer ${request.token}`);
  const trace = span === undefined ? request : traceHeaders(span);
  if (trace.traceparent !== undefined) metadata.set('traceparent', trace.traceparent);
  if (trace.tracestate !== undefined) metadata.set('tracestate', trace.tracestate);
  return metadata;
}

/**
 * A failed call as the client's answer: runtimed's own (its code from the trailer), the gateway's deadline, or the
 * client gone; undefined for an error that is none of these (rethrown).
 */
function callFailure(
  error: unknown,
  trailer: Metadata | undefined,
  state: { deadlineMs: number; deadlineExceeded: boolean; clientGone: boolean },
): HttpError | undefined {
  if (error instanceof ClientError) {
    const text = (key: string): string | undefined => {
      const value = trailer?.get(key);
      return typeof value === 'string' ? value : undefined;
    };
    return httpErrorOfGrpcFailure({
      status: error.code,
      details: error.details,
      errorCode: text(METADATA_KEYS.errorCode),
      errorSource: text(METADATA_KEYS.errorSource),
    });
  }
  if (state.deadlineExceeded) return httpErrorOf('InvocationTimeout', `no answer from runtimed within ${state.deadlineMs} ms`);
  if (state.clientGone) return httpErrorOf('Internal', 'the client closed the request');
  return undefined;
}
