import { ERROR_CODES, GRPC_STATUS, errorCodeForGrpcStatus, isErrorCode } from '@kruntimes/errors';
import type { ErrorCode, ErrorSource, GrpcStatusCode } from '@kruntimes/errors';

/** The error part of an invoke response, and its HTTP status. */
export interface HttpError {
  status: number;
  code: ErrorCode;
  message: string;
  source: ErrorSource;
}

export interface GrpcFailure {
  /** gRPC status code of the failed call. */
  status: number;
  details: string;
  /** Trailers `krt-error-code` and `krt-error-source`, when the server sent them. */
  errorCode?: string | undefined;
  errorSource?: string | undefined;
}

function isGrpcStatus(value: number): value is GrpcStatusCode {
  return (Object.values(GRPC_STATUS) as number[]).includes(value);
}

/**
 * A failed InvokeFunction as the HTTP answer: the kruntimes code from the trailer
 * through the one error table; without one (a transport failure, another version), the
 * most conservative reading of the bare gRPC status.
 */
export function httpErrorOfGrpcFailure(failure: GrpcFailure): HttpError {
  const code: ErrorCode =
    failure.errorCode !== undefined && isErrorCode(failure.errorCode)
      ? failure.errorCode
      : errorCodeForGrpcStatus(isGrpcStatus(failure.status) ? failure.status : GRPC_STATUS.UNKNOWN);
  const spec = ERROR_CODES[code];
  const source: ErrorSource = failure.errorSource === 'function' || failure.errorSource === 'platform' ? failure.errorSource : spec.source;
  return { status: spec.http, code, source, message: failure.details === '' ? spec.summary : failure.details };
}

/** Seconds a client should wait before trying again, sent as `Retry-After`. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * `Retry-After` for an answer that says "not now" (429: an invocation of the Run is in
 * flight; 503: authorization, the Run or its owner unavailable for now): clients and proxies
 * that honour it back off instead of retrying at once. Other answers get none.
 */
export function retryAfterSeconds(error: Pick<HttpError, 'status'>): number | undefined {
  return error.status === 429 || error.status === 503 ? RETRY_AFTER_SECONDS : undefined;
}

export function httpErrorOf(code: ErrorCode, message: string): HttpError {
  const spec = ERROR_CODES[code];
  return { status: spec.http, code, source: spec.source, message };
}
