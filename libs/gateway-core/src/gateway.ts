import { randomUUID, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { BOUNDS, INVOCATION_ID_HEADER } from '@kruntimes/api';
import { isKruntimesError } from '@kruntimes/errors';
import type { runtimedV1 } from '@kruntimes/proto';
import { ATTR, SpanKind, endFailed, remoteParent, startSpan } from '@kruntimes/tracing';
import type { Span, Tracer } from '@kruntimes/tracing';
import { readBoundedBody } from './body.ts';
import { httpErrorOf, retryAfterSeconds } from './error-mapping.ts';
import type { HttpError } from './error-mapping.ts';
import { FilePoller } from './file-poller.ts';
import { Forwarder } from './forwarder.ts';
import { parseInvoke, parseJsonBody, pathOf } from './invoke-request.ts';
import type { CheckedInvokeRequest, InvokeTarget } from './invoke-request.ts';
import { NO_METRICS } from './metrics.ts';
import type { GatewayMetrics, RouteLabel } from './metrics.ts';
import type { OwnerHints } from './owner-hints.ts';
import type { UpstreamResolver } from './resolver.ts';
import { conductOf } from './shutdown.ts';
import type { ShutdownPhase } from './shutdown.ts';

export interface GatewayOptions {
  host: string;
  port: number;
  tlsCertFile: string;
  tlsKeyFile: string;
  runtimedCaFile: string;
  resolver: UpstreamResolver;
  logger: Logger;
  metrics?: GatewayMetrics;
  /**
   * Tracing on: a server span per request and a client span per call to runtimed
   * (@kruntimes/tracing's startTracing). Undefined: no span is made, not even a no-op one.
   */
  tracer?: Tracer;
  /** How often the certificate files are checked for a change. Default 1 s. */
  reloadIntervalMs?: number;
  connectTimeoutMs?: number;
  /** Request body limit in bytes. Default BOUNDS.requestBodyBytes (1 MiB). */
  bodyLimitBytes?: number;
  /** The owner hints per Run; default a store with its default bounds (owner-hints.ts). */
  ownerHints?: OwnerHints;
}

type Request = IncomingMessage;
type Response = ServerResponse;

/**
 * The headers helmet's defaults put on every answer, taken once at start: setting them
 * from a list costs a fraction of running its middleware chain per request.
 */
function securityHeaders(): readonly (readonly [string, string])[] {
  const headers: [string, string][] = [];
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]): void => {
      headers.push([name, Array.isArray(value) ? value.join(', ') : String(value)]);
    },
    removeHeader: (): void => undefined,
    getHeader: (): undefined => undefined,
  };
  helmet()({ headers: {}, method: 'GET', url: '/' } as unknown as IncomingMessage, recorder as unknown as ServerResponse, () => undefined);
  if (headers.length === 0) throw new Error('helmet set no headers');
  return headers;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The kubelet's readiness probe (HTTPS, no token): 200 while serving, 503 from SIGTERM on,
 * so that the endpoints drop the replica while it still accepts (shutdown.ts).
 */
export const READINESS_PATH = '/readyz';

/**
 * A refused (413) body still on its way is read and discarded before the answer is sent,
 * at most this long and this much: a client that writes its whole body before it reads
 * (Python's urllib, requests) then reads the 413 instead of a reset connection.
 */
const DISCARD_BOUND_MS = 10_000;
const DISCARD_BOUND_BYTES = 64 * 1024 * 1024;

/** What the access line and the metrics of one request say, filled in as it goes. */
interface RequestState {
  path: string;
  route: RouteLabel;
  invocationId: string;
  target: InvokeTarget | undefined;
  code?: string;
  upstream?: string | undefined;
  upstreamSeconds?: number | undefined;
  /** The message of the error answered (with `code`), for the span's status. */
  message?: string;
  /** The request's server span (tracing on). */
  span?: Span;
}

/** The server span's name: the route template, never the path (its UIDs would make every name unique). */
const SPAN_NAMES: Record<RouteLabel, string> = {
  functions: 'POST /v1/namespaces/{namespace}/runtimes/{runtime}/functions/{uid}:invoke',
  runs: 'POST /v1/namespaces/{namespace}/runtimes/{runtime}/runs/{uid}:invoke',
  other: 'HTTP',
};

/**
 * The runtime-gateway: HTTPS only (there is no plaintext listener), stateless. Turns
 * `POST .../functions/{uid}:invoke` into one FunctionRuntime.InvokeFunction on a ready
 * runtimed of the Runtime, and its answer back into HTTP through the one error table.
 * It does not authorize: it requires a bearer token and forwards it; runtimed reviews it.
 */
export class Gateway {
  readonly server: Server;
  readonly #options: GatewayOptions;
  readonly #forwarder: Forwarder;
  readonly #metrics: GatewayMetrics;
  readonly #logger: Logger;
  readonly #tracer: Tracer | undefined;
  readonly #pollers: FilePoller[] = [];
  readonly #bodyLimit: number;
  #inflight = 0;
  #phase: ShutdownPhase = 'serving';
  readonly #idle: (() => void)[] = [];
  #certificate: X509Certificate;
  readonly #securityHeaders = securityHeaders();

  private constructor(options: GatewayOptions, tls: { cert: string; key: string }, caPem: string) {
    this.#options = options;
    this.#logger = options.logger;
    this.#metrics = options.metrics ?? NO_METRICS;
    this.#tracer = options.tracer;
    this.#bodyLimit = options.bodyLimitBytes ?? BOUNDS.requestBodyBytes;
    this.#certificate = new X509Certificate(tls.cert);
    this.#forwarder = new Forwarder({
      resolver: options.resolver,
      caPem,
      logger: options.logger,
      ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
      ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.ownerHints === undefined ? {} : { ownerHints: options.ownerHints }),
    });
    // Plain node:http handling (no framework): one handler, the answer written once.
    const app = (request: Request, response: Response): void => {
      if (request.method === 'GET' && pathOf(request.url ?? '') === READINESS_PATH) {
        // Not counted nor logged: the kubelet asks every few seconds.
        this.#answerReadiness(response);
        return;
      }
      this.#handle(request, response).catch((error: unknown) => {
        // The last resort, should #handle ever throw.
        this.#logger.error({ err: error, method: request.method, path: pathOf(request.url ?? '') }, 'request failed');
        if (!response.headersSent) this.#send(response, { invocationId: randomUUID() }, httpErrorOf('Internal', 'internal error'));
        else response.destroy();
      });
    };
    this.server = createServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, app);
    // `Expect: 100-continue` (curl sends it for large bodies): the client is told to send
    // its body only when everything but the body is acceptable; otherwise it gets the
    // error at once and never uploads (up to) a megabyte for nothing.
    this.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
      if (this.#acceptsHeaders(request)) response.writeContinue();
      app(request, response);
    });
    // A client gets 20 s for its headers and 60 s for the whole request (a 1 MiB body
    // included): slow senders cannot hold connections open for Node's default 5 minutes.
    this.server.headersTimeout = 20_000;
    this.server.requestTimeout = 60_000;
  }

  static async start(options: GatewayOptions): Promise<Gateway> {
    const [cert, key, caPem] = await Promise.all([
      readFile(options.tlsCertFile, 'utf8'),
      readFile(options.tlsKeyFile, 'utf8'),
      readFile(options.runtimedCaFile, 'utf8'),
    ]);
    const gateway = new Gateway(options, { cert, key }, caPem);
    await new Promise<void>((resolve, reject) => {
      gateway.server.once('error', reject);
      gateway.server.listen(options.port, options.host, () => {
        gateway.server.off('error', reject);
        resolve();
      });
    });
    gateway.#watchFiles([cert, key], caPem);
    gateway.#logger.info({ address: gateway.address, certificate: gateway.#certificate.fingerprint256 }, 'gateway listening (HTTPS)');
    return gateway;
  }

  get address(): AddressInfo {
    return this.server.address() as AddressInfo;
  }

  /** SHA-256 fingerprint of the serving certificate new connections get. */
  get certificateFingerprint(): string {
    return this.#certificate.fingerprint256;
  }

  /** Checks the certificate and CA files now instead of at the next tick. */
  async reloadNow(): Promise<void> {
    await Promise.all(this.#pollers.map((poller) => poller.check()));
  }

  #watchFiles(tls: string[], caPem: string): void {
    const interval = this.#options.reloadIntervalMs ?? 1_000;
    const serving = new FilePoller(
      [this.#options.tlsCertFile, this.#options.tlsKeyFile],
      tls,
      ([cert = '', key = '']) => {
        // Throws while cert and key do not match yet (one written, not the other): retried next tick.
        createSecureContext({ cert, key });
        const certificate = new X509Certificate(cert);
        // Only new TLS connections get the new context; open ones keep theirs.
        this.server.setSecureContext({ cert, key, minVersion: 'TLSv1.2' });
        this.#certificate = certificate;
        this.#logger.info({ certificate: certificate.fingerprint256, notAfter: certificate.validTo }, 'serving certificate reloaded');
      },
      (error) => {
        this.#logger.warn({ err: error }, 'serving certificate not reloaded (retrying)');
      },
    );
    const ca = new FilePoller(
      [this.#options.runtimedCaFile],
      [caPem],
      ([pem = '']) => {
        createSecureContext({ ca: pem });
        this.#forwarder.setCa(pem);
        this.#logger.info('runtimed CA reloaded');
      },
      (error) => {
        this.#logger.warn({ err: error }, 'runtimed CA not reloaded (retrying)');
      },
    );
    for (const poller of [serving, ca]) {
      poller.start(interval);
      this.#pollers.push(poller);
    }
  }

  /**
   * Stops: for `delayMs` (decideShutdownDelayMs) it still accepts and serves but answers
   * not ready and `Connection: close`, while the endpoints drop it; then it stops accepting,
   * lets in-flight requests finish (at most `drainMs`) and closes what is left. Keep-alive
   * connections are closed as they go idle.
   */
  async stop(options: { delayMs?: number; drainMs?: number } = {}): Promise<void> {
    const delayMs = options.delayMs ?? 0;
    const drainMs = options.drainMs ?? 30_000;
    if (delayMs > 0) {
      this.#phase = 'delaying';
      this.#logger.info({ delaySeconds: delayMs / 1000 }, 'shutdown delay: not ready, still accepting new connections');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    this.#phase = 'draining';
    for (const poller of this.#pollers) poller.stop();
    const closed = new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
    this.server.closeIdleConnections();
    this.#logger.info({ inflight: this.#inflight, drainSeconds: drainMs / 1000 }, 'listener closed; draining in-flight requests');
    if (this.#inflight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.#idle.push(resolve)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, drainMs);
        }),
      ]);
      clearTimeout(timer);
      if (this.#inflight > 0)
        this.#logger.warn({ inflight: this.#inflight }, 'drain bound reached; closing connections with requests in flight');
    }
    this.server.closeAllConnections();
    await closed;
    this.#forwarder.close();
    await this.#options.resolver.stop();
    this.#logger.info('gateway stopped');
  }

  /** The readiness answer of the current phase (conductOf). */
  #answerReadiness(response: Response): void {
    const conduct = conductOf(this.#phase);
    const text = JSON.stringify({ ready: conduct.ready, phase: this.#phase });
    for (const [name, value] of this.#securityHeaders) response.setHeader(name, value);
    response.setHeader('cache-control', 'no-store');
    if (!conduct.keepAlive) response.setHeader('connection', 'close');
    response.statusCode = conduct.ready ? 200 : 503;
    response.setHeader('content-type', JSON_CONTENT_TYPE);
    response.setHeader('content-length', Buffer.byteLength(text, 'utf8'));
    response.end(text, 'utf8');
  }

  async #handle(request: Request, response: Response): Promise<void> {
    const started = performance.now();
    const path = pathOf(request.url ?? '');
    const parsed = parseInvoke(request.method, path, request.headers, { bodyLimitBytes: this.#bodyLimit });
    const state: RequestState = {
      path,
      route: parsed.ok ? parsed.request.target.route : (parsed.route ?? 'other'),
      // Echoed in every answer: the client's when valid, else a new one.
      invocationId: (parsed.ok ? parsed.request.invocationId : parsed.invocationId) ?? randomUUID(),
      target: parsed.ok ? parsed.request.target : parsed.target,
    };
    if (this.#tracer !== undefined) state.span = serverSpan(this.#tracer, request, state, parsed.ok ? parsed.request : undefined);
    this.#track(request, response, state, started);
    try {
      if (!parsed.ok) throw parsed.error;
      await this.#invoke(request, response, state, parsed.request);
    } catch (error) {
      // The client went away (mid-body, or while waiting): nobody to answer; logged as 499.
      if (!isKruntimesError(error) && (request.destroyed || response.destroyed)) return;
      if (!isKruntimesError(error)) throw error;
      if (error.code === 'MethodNotAllowed') response.setHeader('allow', 'POST');
      if (error.code === 'PayloadTooLarge' && !request.complete) {
        await this.#refuseWhileReceiving(request, response, state, httpErrorOf(error.code, error.message));
        return;
      }
      this.#send(response, state, httpErrorOf(error.code, error.message));
    }
  }

  /** Counts the request in flight until its response ends, however it ends, and then records it once. */
  #track(request: Request, response: Response, state: RequestState, started: number): void {
    this.#inflight += 1;
    this.#metrics.requestStarted();
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      this.#record(request, response, state, (performance.now() - started) / 1000);
      this.#inflight -= 1;
      if (this.#inflight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    };
    response.once('finish', finish);
    response.once('close', finish);
  }

  /** The one place a request is counted and logged: its metrics and its access line. */
  #record(request: Request, response: Response, state: RequestState, seconds: number): void {
    const status = response.writableFinished ? response.statusCode : 499;
    this.#metrics.requestFinished(state.route, status, seconds, state.upstreamSeconds);
    const { target, code, upstream, span } = state;
    if (span !== undefined) {
      span.setAttribute('http.response.status_code', status);
      if (code !== undefined) endFailed(span, code, state.message ?? '');
      else if (status === 499) endFailed(span, 'Internal', 'the client closed the request');
      else span.end();
    }
    this.#logger.info(
      {
        method: request.method,
        path: state.path,
        status,
        durationMs: milliseconds(seconds),
        invocationId: state.invocationId,
        ...(target === undefined ? {} : { namespace: target.namespace, runtime: target.runtime, runUID: target.uid }),
        ...(code === undefined ? {} : { code }),
        ...(upstream === undefined ? {} : { upstream, upstreamMs: milliseconds(state.upstreamSeconds ?? 0) }),
      },
      'request',
    );
  }

  /** Reads the body (bounded), forwards it once to a runtimed of the Runtime and answers with what it said. */
  async #invoke(request: Request, response: Response, state: RequestState, invoke: CheckedInvokeRequest): Promise<void> {
    const body = await readBoundedBody(request, this.#bodyLimit);
    parseJsonBody(body);
    const abort = new AbortController();
    const onClose = (): void => {
      if (!response.writableFinished) abort.abort();
    };
    response.once('close', onClose);
    const { target, token, timeoutMs, traceparent, tracestate } = invoke;
    const result = await this.#forwarder.forward({
      namespace: target.namespace,
      runtime: target.runtime,
      uid: target.uid,
      invocationId: state.invocationId,
      payload: body,
      timeoutMs,
      token,
      ...(traceparent === undefined ? {} : { traceparent }),
      ...(tracestate === undefined ? {} : { tracestate }),
      ...(state.span === undefined ? {} : { span: state.span }),
      signal: abort.signal,
    });
    response.off('close', onClose);
    state.upstream = result.upstream;
    state.upstreamSeconds = result.upstreamSeconds;
    this.#send(response, state, result.ok ? answerOf(state.invocationId, result.response) : result.error);
  }

  /** Whether a request passes every check that does not need its body. */
  #acceptsHeaders(request: IncomingMessage): boolean {
    return parseInvoke(request.method, pathOf(request.url ?? ''), request.headers, { bodyLimitBytes: this.#bodyLimit }).ok;
  }

  /**
   * A 413 for a body that is still arriving, answered like nginx's lingering close: the whole
   * answer is written at once (a client that waits, e.g. on `Expect: 100-continue`, reads it
   * and sends nothing more), but the response is ended only once the rest of the body was
   * read and thrown away, bounded. Node closes a connection whose answer ended before its
   * request did, and the bytes still arriving would then reset it: a client that writes its
   * whole body before it reads (Python's urllib, requests) would see the reset, not the 413.
   */
  async #refuseWhileReceiving(request: Request, response: Response, state: RequestState, error: HttpError): Promise<void> {
    this.#send(response, state, error, { endLater: true });
    const ended = await this.#discardRest(request);
    response.end();
    // Past the bounds: whatever the client is still sending is not read any more.
    if (!ended) request.socket.destroySoon();
  }

  /**
   * Reads the rest of a refused body and throws it away (never kept), bounded in time and
   * bytes. True when the body ended within the bounds.
   */
  async #discardRest(request: Request): Promise<boolean> {
    request.removeAllListeners('data');
    return new Promise<boolean>((resolve) => {
      let discarded = 0;
      const done = (ended: boolean): void => {
        clearTimeout(timer);
        request.off('data', count);
        request.off('end', onEnd);
        request.off('close', onClose);
        if (!ended) request.pause();
        resolve(ended);
      };
      const count = (chunk: Buffer): void => {
        discarded += chunk.length;
        if (discarded > DISCARD_BOUND_BYTES) done(false);
      };
      const onEnd = (): void => {
        done(true);
      };
      const onClose = (): void => {
        done(request.complete);
      };
      const timer = setTimeout(() => {
        done(false);
      }, DISCARD_BOUND_MS);
      request.on('data', count);
      request.once('end', onEnd);
      request.once('close', onClose);
      request.resume();
    });
  }

  /** The answer, head and body in one write; `endLater` leaves the response to be ended by the caller. */
  #send(
    response: Response,
    state: Pick<RequestState, 'invocationId' | 'code' | 'message'>,
    body: HttpError | Record<string, unknown>,
    options: { endLater?: boolean } = {},
  ): void {
    if (response.headersSent || response.destroyed) return;
    for (const [name, value] of this.#securityHeaders) response.setHeader(name, value);
    response.setHeader(INVOCATION_ID_HEADER, state.invocationId);
    response.setHeader('cache-control', 'no-store');
    if (!conductOf(this.#phase).keepAlive) response.setHeader('connection', 'close');
    let status = 200;
    let json: unknown = body;
    if (isHttpError(body)) {
      state.code = body.code;
      state.message = body.message;
      status = body.status;
      json = { invocationId: state.invocationId, error: { code: body.code, message: body.message, source: body.source } };
      const retryAfter = retryAfterSeconds(body);
      if (retryAfter !== undefined) response.setHeader('retry-after', String(retryAfter));
    }
    // A string, not a Buffer: Node then sends the head and the body in one write.
    const text = JSON.stringify(json);
    response.statusCode = status;
    response.setHeader('content-type', JSON_CONTENT_TYPE);
    response.setHeader('content-length', Buffer.byteLength(text, 'utf8'));
    if (options.endLater === true) response.write(text, 'utf8');
    else response.end(text, 'utf8');
  }
}

/** The request's server span, under the caller's trace context when it sent a valid one. */
function serverSpan(tracer: Tracer, request: Request, state: RequestState, invoke: CheckedInvokeRequest | undefined): Span {
  const { target } = state;
  return startSpan(tracer, SPAN_NAMES[state.route], SpanKind.SERVER, remoteParent(invoke?.traceparent, invoke?.tracestate), {
    'http.request.method': request.method ?? '',
    'url.path': state.path,
    ...(state.route === 'other' ? {} : { 'http.route': SPAN_NAMES[state.route].slice('POST '.length) }),
    [ATTR.invocationId]: state.invocationId,
    ...(target === undefined ? {} : { [ATTR.namespace]: target.namespace, [ATTR.runtime]: target.runtime, [ATTR.runUid]: target.uid }),
  });
}

function isHttpError(body: HttpError | Record<string, unknown>): body is HttpError {
  return typeof body.status === 'number' && typeof body.code === 'string' && typeof body.source === 'string';
}

/** runtimed's answer as the client's JSON: the result parsed (empty is null), or Internal when it is not JSON. */
function answerOf(invocationId: string, answer: runtimedV1.InvokeFunctionResponse): HttpError | Record<string, unknown> {
  let result: unknown;
  try {
    result = answer.result.length === 0 ? null : JSON.parse(answer.result.toString('utf8'));
  } catch {
    return httpErrorOf('Internal', 'runtimed answered with a result that is not JSON');
  }
  return {
    invocationId,
    result,
    outputs: answer.outputs,
    ...(answer.stdout === undefined ? {} : { stdout: answer.stdout }),
    ...(answer.stderr === undefined ? {} : { stderr: answer.stderr }),
    attempt: answer.attempt,
  };
}

/** Seconds as milliseconds with three decimals (microseconds) for the access line. */
function milliseconds(seconds: number): number {
  return Math.round(seconds * 1_000_000) / 1000;
}
