import { randomUUID } from 'node:crypto';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Agent } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { BOUNDS, DEFAULTS, INVOCATION_ID_HEADER, isValidInvocationId } from '@kruntimes/api';
import { InvocationError, InvocationTransportError, errorFromResponse, isRecord } from './errors.ts';
import type { TransportFailureKind } from './errors.ts';

export interface InvokeOptions {
  /** The Run's `status.endpoint.url` (https). */
  url: string;
  /** The Run's `status.endpoint.caBundle`: base64 of a PEM bundle. Absent: the system trust store. */
  caBundle?: string | undefined;
  /** Bearer token of the caller (authorized by the platform with a SelfSubjectAccessReview). */
  token: string;
  /** Any JSON value, or the raw bytes of a JSON document (sent as they are). */
  payload: unknown;
  /** 1-128 bytes of visible ASCII; a random UUID when absent. */
  invocationId?: string | undefined;
  /** Deadline for the whole call; default INVOKE_DEFAULT_TIMEOUT_MS. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /**
   * A keep-alive agent whose connections are reused (a Sandbox's one connection); absent:
   * a new connection per invocation. Either way a transport failure says exactly whether
   * the request may have been sent (see PendingInvocation.mayHaveBeenSent).
   */
  agent?: Agent | undefined;
}

export interface InvocationResult {
  invocationId: string;
  /** The handler's return value (JSON). */
  result: unknown;
  outputs: Record<string, string>;
  stdout?: string;
  stderr?: string;
  /** The Run attempt that served the invocation. */
  attempt: number;
  /** HTTP status of the answer. */
  status: number;
}

/** The gateway's default invocation timeout plus room for its own 504 to arrive first. */
export const INVOKE_DEFAULT_TIMEOUT_MS = (DEFAULTS.invocationTimeoutSeconds + 10) * 1000;

/** result + outputs + two captured streams, JSON-escaped (up to 6 bytes per byte), with room to spare. */
const MAX_RESPONSE_BYTES =
  6 * (BOUNDS.resultBytes + 2 * BOUNDS.capturedStreamBytes) +
  BOUNDS.outputCount * (BOUNDS.outputKeyBytes + 6 * BOUNDS.outputValueBytes) +
  64 * 1024;

interface Prepared {
  url: URL;
  body: Buffer;
  ca: string | undefined;
  invocationId: string;
}

/**
 * Checks everything the gateway would refuse, before anything is sent: an invocation ID
 * that is not valid, a body over BOUNDS.requestBodyBytes, a payload that is not JSON, a
 * URL that is not https, a CA bundle that is not base64 PEM. Exported for tests.
 */
export function prepareInvocation(options: InvokeOptions): Prepared {
  const invocationId = options.invocationId ?? randomUUID();
  const refuse = (code: 'InvalidRequest' | 'InvalidInvocationId' | 'PayloadTooLarge', message: string): InvocationError =>
    new InvocationError({ code, message, invocationId });
  if (!isValidInvocationId(invocationId)) {
    throw refuse('InvalidInvocationId', `invocation ID must be 1-${BOUNDS.invocationIdBytes} bytes of visible ASCII`);
  }
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw refuse('InvalidRequest', 'endpoint URL is not a URL');
  }
  if (url.protocol !== 'https:') throw refuse('InvalidRequest', `endpoint URL must be https, not ${url.protocol}`);
  if (Buffer.byteLength(options.url) > BOUNDS.endpointUrlBytes)
    throw refuse('InvalidRequest', `endpoint URL is over ${BOUNDS.endpointUrlBytes} bytes`);
  if (!/^[\x21-\x7e]+$/.test(options.token))
    throw refuse('InvalidRequest', 'the bearer token is empty or has characters a header cannot carry');

  let body: Buffer;
  if (options.payload instanceof Uint8Array) {
    body = Buffer.from(options.payload.buffer, options.payload.byteOffset, options.payload.byteLength);
    if (body.length > BOUNDS.requestBodyBytes) throw refuse('PayloadTooLarge', payloadTooLarge(body.length));
    try {
      JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch {
      throw refuse('InvalidRequest', 'payload bytes are not a UTF-8 JSON document');
    }
  } else {
    // JSON.stringify returns undefined for undefined, functions and symbols, whatever its type says.
    let text: unknown;
    try {
      text = JSON.stringify(options.payload);
    } catch (error) {
      throw refuse('InvalidRequest', `payload cannot be serialised as JSON: ${(error as Error).message}`);
    }
    if (typeof text !== 'string') throw refuse('InvalidRequest', 'payload is not a JSON value');
    body = Buffer.from(text);
    if (body.length > BOUNDS.requestBodyBytes) throw refuse('PayloadTooLarge', payloadTooLarge(body.length));
  }

  let ca: string | undefined;
  if (options.caBundle !== undefined) {
    ca = Buffer.from(options.caBundle, 'base64').toString('utf8');
    if (Buffer.byteLength(ca) > BOUNDS.caBundleBytes || !ca.includes('-----BEGIN CERTIFICATE-----')) {
      throw refuse('InvalidRequest', `caBundle is not base64 of a PEM certificate bundle of at most ${BOUNDS.caBundleBytes} bytes`);
    }
  }
  return { url, body, ca, invocationId };
}

function payloadTooLarge(bytes: number): string {
  return `payload is ${bytes} bytes, over the ${BOUNDS.requestBodyBytes}-byte limit`;
}

/**
 * Invokes a function Run through the runtime-gateway: one HTTPS POST, no retry. An
 * invocation is not idempotent (the handler may have side effects, and the platform
 * keeps no record of invocation IDs), so repeating it is the caller's decision: after an
 * InvocationTransportError with requestMayHaveBeenSent false it is always safe; after
 * anything else it may run the function twice.
 *
 * Resolves with the result; rejects with InvocationError (the gateway's answer, or input
 * refused before sending) or InvocationTransportError (no answer).
 */
export async function invokeFunction(options: InvokeOptions): Promise<InvocationResult> {
  const prepared = prepareInvocation(options);
  if (options.signal?.aborted === true) {
    throw new InvocationTransportError({
      kind: 'aborted',
      requestMayHaveBeenSent: false,
      invocationId: prepared.invocationId,
      message: 'invocation aborted before it was sent',
    });
  }
  const timeoutMs = options.timeoutMs ?? INVOKE_DEFAULT_TIMEOUT_MS;
  return await new Promise<InvocationResult>((resolve, reject) => {
    const req = postRequest(prepared, options.token, options.agent);
    const call = new PendingInvocation(prepared.invocationId, req, resolve, reject);
    call.watch(timeoutMs, options.signal);
    req.on('socket', (socket) => {
      if (req.reusedSocket) {
        // An open connection of the agent: nothing of this request is sent while the
        // socket has taken no byte of it (a server that closed the idle connection just
        // before fails the request before or after that, and only after is it ambiguous).
        call.sentSince(socket);
        return;
      }
      (socket as TLSSocket).once('secureConnect', () => {
        call.markSecured();
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      // Node's errors name host, port and syscall, never the headers (the token).
      const kind: TransportFailureKind = call.mayHaveBeenSent ? 'connection' : isTlsError(error) ? 'tls' : 'connect';
      call.fail(kind, `${kindText(kind)}: ${error.message}`, error);
    });
    req.on('response', (res) => {
      readAnswer(res, call);
    });
    req.end(prepared.body);
  });
}

/** The POST of a prepared invocation, not yet sent. */
function postRequest({ url, body, ca, invocationId }: Prepared, token: string, agent: Agent | undefined): ClientRequest {
  return httpsRequest({
    protocol: 'https:',
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? 443 : Number(url.port),
    path: url.pathname + url.search,
    method: 'POST',
    // Without an agent, one connection per invocation: "may the request have been sent" is
    // then exactly "did this connection finish its TLS handshake".
    agent: agent ?? false,
    ...(ca === undefined ? {} : { ca }),
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
      'Content-Length': body.length,
      [INVOCATION_ID_HEADER]: invocationId,
    },
  });
}

/** Collects the gateway's answer, up to MAX_RESPONSE_BYTES, and settles the call with it. */
function readAnswer(res: IncomingMessage, call: PendingInvocation): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      call.fail('response', `answer larger than ${MAX_RESPONSE_BYTES} bytes`);
      call.destroy();
      return;
    }
    chunks.push(chunk);
  });
  res.on('error', (error) => {
    call.fail('connection', `answer cut short: ${error.message}`, error);
  });
  res.on('end', () => {
    call.answer(res.statusCode ?? 0, chunks, res.headers[INVOCATION_ID_HEADER]);
  });
}

/**
 * One invocation in flight. It settles once, with whichever comes first: the answer, a
 * transport failure, the timeout or the abort; later events are ignored.
 */
class PendingInvocation {
  /** The connection finished its TLS handshake: from then on the request may have been sent. */
  #secured = false;
  /** A reused connection, and how many bytes it had taken before this request. */
  #reused: { socket: Socket; bytesBefore: number } | undefined;
  #settled = false;
  #timer: NodeJS.Timeout | undefined;
  #signal: AbortSignal | undefined;
  readonly #invocationId: string;
  readonly #req: ClientRequest;
  readonly #resolve: (result: InvocationResult) => void;
  readonly #reject: (error: Error) => void;

  constructor(invocationId: string, req: ClientRequest, resolve: (result: InvocationResult) => void, reject: (error: Error) => void) {
    this.#invocationId = invocationId;
    this.#req = req;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Starts the deadline and listens for the caller's abort. */
  watch(timeoutMs: number, signal: AbortSignal | undefined): void {
    this.#timer = setTimeout(() => {
      this.fail('timeout', `no answer within ${timeoutMs} ms`);
      this.destroy();
    }, timeoutMs);
    this.#signal = signal;
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  markSecured(): void {
    this.#secured = true;
  }

  /** Whether the request may have been sent: on a new connection once it is secured, on a reused one once it took a byte. */
  get mayHaveBeenSent(): boolean {
    if (this.#reused === undefined) return this.#secured;
    return this.#reused.socket.bytesWritten > this.#reused.bytesBefore;
  }

  /** The request got a reused connection: it may have been sent once the socket took any byte of it. */
  sentSince(socket: Socket): void {
    this.#reused = { socket, bytesBefore: socket.bytesWritten };
  }

  fail(kind: TransportFailureKind, message: string, cause?: unknown): void {
    if (!this.#settle()) return;
    this.#reject(
      new InvocationTransportError({
        kind,
        requestMayHaveBeenSent: this.mayHaveBeenSent,
        invocationId: this.#invocationId,
        message,
        ...(cause === undefined ? {} : { cause }),
      }),
    );
  }

  /** The whole answer: a 2xx is the result, anything else the gateway's error. */
  answer(status: number, chunks: Buffer[], headerId: string | string[] | undefined): void {
    if (!this.#settle()) return;
    const text = Buffer.concat(chunks).toString('utf8');
    const answeredId = typeof headerId === 'string' && headerId !== '' ? headerId : this.#invocationId;
    if (status < 200 || status > 299) {
      this.#reject(errorFromResponse(status, text, answeredId));
      return;
    }
    try {
      this.#resolve(resultFromResponse(status, text, answeredId));
    } catch (error) {
      this.#reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  destroy(): void {
    this.#req.destroy();
  }

  readonly #onAbort = (): void => {
    this.fail('aborted', 'invocation aborted');
    this.destroy();
  };

  /** False when already settled; else marks it settled and stops the deadline and the abort listener. */
  #settle(): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    return true;
  }
}

/** A 2xx answer as an InvocationResult; a body that is not one is an `Internal` error. */
export function resultFromResponse(status: number, text: string, invocationId: string): InvocationResult {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const malformed = (what: string): InvocationError =>
    new InvocationError({ code: 'Internal', httpStatus: status, invocationId, message: `gateway answered HTTP ${status} with ${what}` });
  if (!isRecord(body)) throw malformed('a body that is not a JSON object');
  if (!('result' in body)) throw malformed('no result');
  const outputs = body.outputs ?? {};
  if (!isRecord(outputs) || !Object.values(outputs).every((value) => typeof value === 'string'))
    throw malformed('outputs that are not strings');
  const attempt = body.attempt;
  if (typeof attempt !== 'number' || !Number.isInteger(attempt)) throw malformed('no attempt');
  const result: InvocationResult = {
    invocationId: typeof body.invocationId === 'string' && body.invocationId !== '' ? body.invocationId : invocationId,
    result: body.result,
    outputs: outputs as Record<string, string>,
    attempt,
    status,
  };
  if (typeof body.stdout === 'string') result.stdout = body.stdout;
  if (typeof body.stderr === 'string') result.stderr = body.stderr;
  return result;
}

function isTlsError(error: NodeJS.ErrnoException): boolean {
  const code = error.code ?? '';
  return (
    /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_|ERR_OSSL_)/.test(code) ||
    /certificate|SSL|TLS/i.test(error.message)
  );
}

function kindText(kind: TransportFailureKind): string {
  switch (kind) {
    case 'connect':
      return 'cannot connect to the gateway';
    case 'tls':
      return 'TLS handshake with the gateway failed';
    case 'connection':
      return 'connection to the gateway failed after the request may have been sent';
    case 'timeout':
    case 'aborted':
    case 'response':
      return kind;
  }
}
