import { ERROR_CODES, isErrorCode } from '@kruntimes/errors';
import type { ErrorCode, ErrorSource } from '@kruntimes/errors';

/**
 * Codes the platform answers before the handler could run, for a reason that may pass on
 * its own: repeating the same request is safe. Only codes a body names explicitly; a
 * status read without a body (codeForHttpStatus) never lands here.
 */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['AuthorizationUnavailable']);

/**
 * An invocation the platform or the function refused or failed: the gateway's JSON error
 * body (`{ invocationId, error: { code, message, source } }`), or a check the SDK made
 * before sending (then `httpStatus` is undefined and nothing was sent).
 */
export class InvocationError extends Error {
  readonly code: ErrorCode;
  /** The gateway's HTTP status; undefined when the SDK refused the request before sending it. */
  readonly httpStatus: number | undefined;
  readonly source: ErrorSource;
  readonly invocationId: string;

  constructor(fields: { code: ErrorCode; message: string; invocationId: string; httpStatus?: number; source?: ErrorSource }) {
    super(fields.message);
    this.name = 'InvocationError';
    this.code = fields.code;
    this.httpStatus = fields.httpStatus;
    this.source = fields.source ?? ERROR_CODES[fields.code].source;
    this.invocationId = fields.invocationId;
  }

  /** Whether the SDK refused the request itself (bad input): nothing was sent. */
  get local(): boolean {
    return this.httpStatus === undefined;
  }

  /** Whether the function certainly did not run and the same request may succeed later (`AuthorizationUnavailable`). */
  get retryable(): boolean {
    return this.source === 'platform' && RETRYABLE_CODES.has(this.code);
  }
}

/** Where a transport failure happened. */
export type TransportFailureKind = 'connect' | 'tls' | 'timeout' | 'aborted' | 'connection' | 'response';

/**
 * No answer from the gateway. `requestMayHaveBeenSent` is false only when the failure came
 * before the TLS handshake completed (the request is written only after it): then the
 * function certainly did not run and the call may be repeated. When true, the function
 * may have run (or still be running): repeat only if running it twice is acceptable.
 */
export class InvocationTransportError extends Error {
  readonly kind: TransportFailureKind;
  readonly requestMayHaveBeenSent: boolean;
  readonly invocationId: string;

  constructor(fields: {
    kind: TransportFailureKind;
    requestMayHaveBeenSent: boolean;
    invocationId: string;
    message: string;
    cause?: unknown;
  }) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = 'InvocationTransportError';
    this.kind = fields.kind;
    this.requestMayHaveBeenSent = fields.requestMayHaveBeenSent;
    this.invocationId = fields.invocationId;
  }
}

/**
 * The code of an error answer whose body carries none (a proxy in front of the gateway,
 * another version): the HTTP status read through the error table, conservatively.
 */
export function codeForHttpStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'InvalidRequest';
    case 401:
      return 'Unauthenticated';
    case 403:
      return 'Forbidden';
    case 404:
      return 'RunNotFound';
    case 405:
      return 'MethodNotAllowed';
    case 413:
      return 'PayloadTooLarge';
    case 415:
      return 'UnsupportedMediaType';
    case 429:
      return 'InvocationInFlight';
    case 501:
      return 'Unimplemented';
    case 502:
    case 503:
      return 'RunNotReady';
    case 504:
      return 'InvocationTimeout';
    default:
      return 'Internal';
  }
}

/** The InvocationError of a non-2xx answer, from its JSON body when it has one. */
export function errorFromResponse(status: number, bodyText: string, invocationId: string): InvocationError {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = undefined;
  }
  const record = isRecord(body) ? body : {};
  const error = isRecord(record.error) ? record.error : {};
  const id = typeof record.invocationId === 'string' && record.invocationId !== '' ? record.invocationId : invocationId;
  const code = isErrorCode(error.code) ? error.code : codeForHttpStatus(status);
  const source = error.source === 'function' || error.source === 'platform' ? error.source : ERROR_CODES[code].source;
  const message =
    typeof error.message === 'string' && error.message !== ''
      ? error.message
      : `gateway answered HTTP ${status} (${ERROR_CODES[code].summary})`;
  return new InvocationError({ code, message, invocationId: id, httpStatus: status, source });
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
