import { ERROR_CODES, GRPC_STATUS } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { RETRY_AFTER_SECONDS, httpErrorOf, httpErrorOfGrpcFailure, retryAfterSeconds } from './error-mapping.ts';

describe('Retry-After: only on the answers that say "not now"', () => {
  it.each(Object.entries(ERROR_CODES).map(([code, spec]) => [code, spec.http] as const))('%s (HTTP %i)', (code, http) => {
    const expected = http === 429 || http === 503 ? RETRY_AFTER_SECONDS : undefined;
    expect(retryAfterSeconds(httpErrorOf(code as ErrorCode, 'm'))).toBe(expected);
  });
});

describe('a failed InvokeFunction as HTTP', () => {
  // The table under "Response" in docs/invoke-contract.md, with the code runtimed sends in the krt-error-code trailer.
  it.each([
    ['InvalidRequest', GRPC_STATUS.INVALID_ARGUMENT, 400, 'platform'],
    ['Unauthenticated', GRPC_STATUS.UNAUTHENTICATED, 401, 'platform'],
    ['Forbidden', GRPC_STATUS.PERMISSION_DENIED, 403, 'platform'],
    ['RunNotFound', GRPC_STATUS.NOT_FOUND, 404, 'platform'],
    ['PayloadTooLarge', GRPC_STATUS.OUT_OF_RANGE, 413, 'platform'],
    ['InvocationInFlight', GRPC_STATUS.RESOURCE_EXHAUSTED, 429, 'platform'],
    ['FunctionFailed', GRPC_STATUS.UNKNOWN, 500, 'function'],
    ['FunctionOutputInvalid', GRPC_STATUS.UNKNOWN, 500, 'function'],
    ['Internal', GRPC_STATUS.INTERNAL, 500, 'platform'],
    ['AuthorizationUnavailable', GRPC_STATUS.UNAVAILABLE, 503, 'platform'],
    ['RunNotReady', GRPC_STATUS.UNAVAILABLE, 503, 'platform'],
    ['OwnerUnavailable', GRPC_STATUS.UNAVAILABLE, 503, 'platform'],
    ['EpochMismatch', GRPC_STATUS.FAILED_PRECONDITION, 503, 'platform'],
    ['RegistrationLost', GRPC_STATUS.UNAVAILABLE, 503, 'platform'],
    ['InvocationTimeout', GRPC_STATUS.DEADLINE_EXCEEDED, 504, 'platform'],
  ] as [ErrorCode, number, number, string][])('trailer %s (gRPC %d) -> HTTP %d from the %s', (code, status, http, source) => {
    expect(httpErrorOfGrpcFailure({ status, details: 'why', errorCode: code, errorSource: ERROR_CODES[code].source })).toEqual({
      status: http,
      code,
      source,
      message: 'why',
    });
  });

  // No trailer (a transport failure, a peer of another version): the conservative reading.
  it.each([
    [GRPC_STATUS.UNAVAILABLE, 'OwnerUnavailable', 503],
    [GRPC_STATUS.DEADLINE_EXCEEDED, 'InvocationTimeout', 504],
    [GRPC_STATUS.UNAUTHENTICATED, 'Unauthenticated', 401],
    [GRPC_STATUS.PERMISSION_DENIED, 'Forbidden', 403],
    [GRPC_STATUS.RESOURCE_EXHAUSTED, 'InvocationInFlight', 429],
    [GRPC_STATUS.UNKNOWN, 'Internal', 500],
    [GRPC_STATUS.INTERNAL, 'Internal', 500],
    [GRPC_STATUS.CANCELLED, 'Internal', 500],
    [GRPC_STATUS.UNIMPLEMENTED, 'Unimplemented', 501],
    [99, 'Internal', 500],
  ] as [number, ErrorCode, number][])('bare gRPC status %d -> %s (HTTP %d)', (status, code, http) => {
    const error = httpErrorOfGrpcFailure({ status, details: 'x' });
    expect(error.code).toBe(code);
    expect(error.status).toBe(http);
    expect(error.source).toBe('platform');
  });

  it('an unknown code in the trailer falls back to the status', () => {
    expect(httpErrorOfGrpcFailure({ status: GRPC_STATUS.NOT_FOUND, details: 'x', errorCode: 'NoSuchCode' }).code).toBe('RunNotFound');
  });

  it('the source comes from the trailer when it is a known one, else from the table', () => {
    expect(
      httpErrorOfGrpcFailure({ status: GRPC_STATUS.UNKNOWN, details: 'x', errorCode: 'FunctionFailed', errorSource: 'bogus' }).source,
    ).toBe('function');
    expect(httpErrorOfGrpcFailure({ status: GRPC_STATUS.UNKNOWN, details: 'x', errorCode: 'FunctionFailed' }).source).toBe('function');
  });

  it('an empty message becomes the summary of the code', () => {
    expect(httpErrorOfGrpcFailure({ status: GRPC_STATUS.UNAVAILABLE, details: '', errorCode: 'RunNotReady' }).message).toBe(
      ERROR_CODES.RunNotReady.summary,
    );
  });

  it.each([
    ['RouteNotFound', 404],
    ['MethodNotAllowed', 405],
    ['UnsupportedMediaType', 415],
    ['InvalidInvocationId', 400],
  ] as [ErrorCode, number][])("the gateway's own %s is HTTP %d", (code, http) => {
    expect(httpErrorOf(code, 'm').status).toBe(http);
  });
});
