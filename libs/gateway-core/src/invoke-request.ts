import { BOUNDS, DEFAULTS, INVOCATION_ID_HEADER, isDns1123Label, isUid, isValidInvocationId } from '@kruntimes/api';
import { bearerToken } from '@kruntimes/authz';
import { KruntimesError } from '@kruntimes/errors';

/** Optional request header: the caller's bound on the invocation, in seconds (decimal). */
export const TIMEOUT_HEADER = 'x-kruntime-timeout-seconds';

export type InvokeRoute = 'functions' | 'runs';

export interface InvokeTarget {
  namespace: string;
  runtime: string;
  uid: string;
  route: InvokeRoute;
}

/** What a request path is: an invoke target, a malformed invoke path (400), or no route (404). */
export type PathMatch = { kind: 'invoke'; target: InvokeTarget } | { kind: 'malformed'; message: string } | { kind: 'unknown' };

const INVOKE_PATH = /^\/v1\/namespaces\/([^/]*)\/runtimes\/([^/]*)\/(functions|runs)\/([^/]*):invoke$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** A Service name: the Runtime's Service is named after it, so a Runtime must be one to be invoked. */
export function isDns1035Label(value: string): boolean {
  return value.length <= BOUNDS.dnsLabelBytes && DNS1035_LABEL.test(value);
}

/**
 * Parses the path (without query) of `POST /v1/namespaces/{ns}/runtimes/{runtime}/functions/{uid}:invoke`
 * (or `runs/{uid}:invoke`). By hand, not with express routing: `:invoke` is a literal
 * suffix of the last segment, which path-to-regexp would read as a parameter.
 * Percent-encoded segments are never valid labels or UIDs, so they are not decoded.
 */
export function parseInvokePath(path: string): PathMatch {
  const match = INVOKE_PATH.exec(path);
  if (match === null) return { kind: 'unknown' };
  const [, namespace = '', runtime = '', route = 'functions', uid = ''] = match;
  if (!isDns1123Label(namespace)) return { kind: 'malformed', message: `namespace ${JSON.stringify(namespace)} is not a DNS-1123 label` };
  if (!isDns1035Label(runtime)) return { kind: 'malformed', message: `runtime ${JSON.stringify(runtime)} is not a DNS-1035 label` };
  if (!isUid(uid)) return { kind: 'malformed', message: `${JSON.stringify(uid)} is not a Run UID` };
  return { kind: 'invoke', target: { namespace, runtime, uid, route: route === 'runs' ? 'runs' : 'functions' } };
}

/** Request headers as Node gives them (lower-case names; repeated ones as arrays). */
export type RequestHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** An invoke request that passed every check that does not need its body. */
export interface CheckedInvokeRequest {
  readonly target: InvokeTarget;
  /** The client's invocation ID; undefined when it sent none (the gateway makes one). */
  readonly invocationId: string | undefined;
  readonly token: string;
  readonly timeoutMs: number;
  readonly traceparent?: string;
  readonly tracestate?: string;
}

export type ParsedInvoke =
  | { ok: true; request: CheckedInvokeRequest }
  | {
      ok: false;
      error: KruntimesError;
      /** The route of an invoke path, whatever the method (the metrics label). */
      route: InvokeRoute | undefined;
      /** Known once the method and the path are valid (the access line names it). */
      target: InvokeTarget | undefined;
      /** The client's invocation ID when it is valid, so that even a refusal echoes it. */
      invocationId: string | undefined;
    };

/**
 * Everything about an invoke request that can be checked before its body, in the order that decides which error
 * a request with several faults gets: no route (404), the method (405), a malformed path (400), the invocation ID
 * (400), the bearer token (401), the media type (415), the declared length (400, 413), the timeout (400).
 * The handler answers with it and the `Expect: 100-continue` check asks it, so both always agree.
 */
export function parseInvoke(
  method: string | undefined,
  path: string,
  headers: RequestHeaders,
  limits: { bodyLimitBytes: number },
): ParsedInvoke {
  const header = (name: string): string | undefined => {
    const value = headers[name];
    return typeof value === 'string' || value === undefined ? value : value.join(', ');
  };
  const match = parseInvokePath(path);
  let invocationId: string | undefined;
  let target: InvokeTarget | undefined;
  try {
    // Settled first, as it is echoed in every answer; a malformed one is reported only after the route checks.
    let idError: KruntimesError | undefined;
    const sentId = header(INVOCATION_ID_HEADER);
    try {
      invocationId = sentId === undefined ? undefined : checkInvocationId(sentId);
    } catch (error) {
      if (!(error instanceof KruntimesError)) throw error;
      idError = error;
    }
    if (match.kind === 'unknown') throw new KruntimesError('RouteNotFound', `no route for ${method ?? ''} ${path}`);
    if (method !== 'POST') throw new KruntimesError('MethodNotAllowed', `${method ?? ''} is not allowed here; use POST`);
    if (match.kind === 'malformed') throw new KruntimesError('InvalidRequest', match.message);
    target = match.target;
    if (idError !== undefined) throw idError;
    const token = bearerToken(header('authorization'));
    checkContentType(header('content-type'));
    checkContentLength(header('content-length'), limits.bodyLimitBytes);
    const timeoutMs = invocationTimeoutMs(header(TIMEOUT_HEADER));
    return { ok: true, request: { target, invocationId, token, timeoutMs, ...traceContext(header('traceparent'), header('tracestate')) } };
  } catch (error) {
    if (!(error instanceof KruntimesError)) throw error;
    return { ok: false, error, route: match.kind === 'invoke' ? match.target.route : undefined, target, invocationId };
  }
}

/** Only the path part of a request target (express's req.url may carry a query). */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The client's invocation ID, or a generated one when it sent none; InvalidInvocationId when malformed. */
export function invocationIdOf(header: string | undefined, generate: () => string): string {
  return header === undefined ? generate() : checkInvocationId(header);
}

/** The client's invocation ID as sent; InvalidInvocationId when malformed. */
function checkInvocationId(header: string): string {
  if (!isValidInvocationId(header)) {
    throw new KruntimesError('InvalidInvocationId', `the invocation ID must be 1-${BOUNDS.invocationIdBytes} bytes of visible ASCII`);
  }
  return header;
}

/** Content-Type must be application/json (parameters such as charset=utf-8 allowed). */
export function checkContentType(header: string | undefined): void {
  const mediaType = (header ?? '').split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    throw new KruntimesError('UnsupportedMediaType', `Content-Type must be application/json, not ${JSON.stringify(header ?? '')}`);
  }
}

/** A declared Content-Length over the limit is refused before a byte of the body is read. */
export function checkContentLength(header: string | undefined, limit: number): void {
  if (header === undefined) return;
  if (!/^\d+$/.test(header)) throw new KruntimesError('InvalidRequest', 'Content-Length is not a number');
  if (Number(header) > limit) throw new KruntimesError('PayloadTooLarge', `the request body is over ${limit} bytes`);
}

/**
 * The invocation timeout in ms: the header's value (0 < t <= the API bound) or the
 * default. The gateway always sends it to runtimed, so the owner and the gateway's own
 * deadline agree; runtimed applies the smaller of it and the Run's own timeout.
 */
export function invocationTimeoutMs(header: string | undefined): number {
  if (header === undefined) return DEFAULTS.invocationTimeoutSeconds * 1000;
  const seconds = /^\d+(\.\d{1,3})?$/.test(header) ? Number(header) : Number.NaN;
  if (!(seconds > 0 && seconds <= BOUNDS.maxInvocationTimeoutSeconds)) {
    throw new KruntimesError(
      'InvalidRequest',
      `${TIMEOUT_HEADER} must be a number of seconds in (0, ${BOUNDS.maxInvocationTimeoutSeconds}]`,
    );
  }
  return Math.round(seconds * 1000);
}

/** Decodes the body as UTF-8 JSON (strict: invalid UTF-8 is invalid JSON). */
export function parseJsonBody(body: Buffer): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new KruntimesError('InvalidRequest', 'the request body is not UTF-8');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KruntimesError('InvalidRequest', 'the request body is not JSON');
  }
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
// W3C tracestate: list-members of key=value, printable ASCII without ',' and '=' in values; 512 bytes.
const TRACESTATE = /^[\x20-\x2b\x2d-\x7e]*(,[\x20-\x2b\x2d-\x7e]*){0,31}$/;

/**
 * The W3C trace context to pass through, validated as the spec says a receiver must:
 * an invalid traceparent is dropped (with its tracestate), never an error.
 */
export function traceContext(
  traceparent: string | undefined,
  tracestate: string | undefined,
): { traceparent?: string; tracestate?: string } {
  if (traceparent === undefined) return {};
  const match = TRACEPARENT.exec(traceparent);
  if (match === null) return {};
  const [, version, traceId, parentId, , rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return {};
  if (traceId === '0'.repeat(32) || parentId === '0'.repeat(16)) return {};
  if (tracestate === undefined || tracestate.length > 512 || !TRACESTATE.test(tracestate)) return { traceparent };
  return { traceparent, tracestate };
}
