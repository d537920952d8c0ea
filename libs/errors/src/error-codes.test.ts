import { ERROR_CODES, GRPC_STATUS, errorCodeForGrpcStatus, grpcStatusOf, httpStatusOf, isErrorCode } from './error-codes.ts';
import type { ErrorCode, GrpcStatusCode } from './error-codes.ts';
import { KruntimesError, errorFromCode, isKruntimesError } from './kruntimes-error.ts';

// the table under "Response" in docs/invoke-contract.md, row by row.
const dataplane: [ErrorCode, number, 'platform' | 'function'][] = [
  ['InvalidRequest', 400, 'platform'],
  ['InvalidInvocationId', 400, 'platform'],
  ['Unauthenticated', 401, 'platform'],
  ['Forbidden', 403, 'platform'],
  ['RunNotFound', 404, 'platform'],
  ['PayloadTooLarge', 413, 'platform'],
  ['InvocationInFlight', 429, 'platform'],
  ['FunctionFailed', 500, 'function'],
  ['AuthorizationUnavailable', 503, 'platform'],
  ['RunNotReady', 503, 'platform'],
  ['OwnerUnavailable', 503, 'platform'],
  ['InvocationTimeout', 504, 'platform'],
];

describe('the error table', () => {
  it.each(dataplane)('%s is HTTP %d from the %s', (code, http, source) => {
    expect(httpStatusOf(code)).toBe(http);
    expect(new KruntimesError(code, 'x').source).toBe(source);
  });

  it.each(Object.keys(ERROR_CODES) as ErrorCode[])('%s maps to a valid gRPC status', (code) => {
    expect(Object.values(GRPC_STATUS)).toContain(grpcStatusOf(code));
  });

  // A bare gRPC status (no kruntimes code in metadata) reaching the gateway must still be
  // answered with the HTTP status of the dataplane row it came from.
  it.each(dataplane.filter(([code]) => code !== 'FunctionFailed'))('a bare gRPC status of %s reads back as HTTP %d', (code, http) => {
    expect(httpStatusOf(errorCodeForGrpcStatus(grpcStatusOf(code)))).toBe(http);
  });

  it('enqueues recovery only for a stale or unreachable owner', () => {
    const recovering = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].triggersRecovery);
    expect(recovering.sort()).toEqual(['OwnerUnavailable', 'RegistrationLost']);
  });

  it.each(Object.values(GRPC_STATUS) as GrpcStatusCode[])('gRPC status %d without a kruntimes code reads as a known code', (status) => {
    expect(isErrorCode(errorCodeForGrpcStatus(status))).toBe(true);
  });
});

describe('KruntimesError', () => {
  it('carries code, statuses, body and cause', () => {
    const cause = new Error('socket closed');
    const error = new KruntimesError('OwnerUnavailable', 'owner unreachable', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.grpcStatus).toBe(GRPC_STATUS.UNAVAILABLE);
    expect(error.httpStatus).toBe(503);
    expect(error.cause).toBe(cause);
    expect(error.terminal).toBe(false);
    expect(error.toBody()).toEqual({ code: 'OwnerUnavailable', message: 'owner unreachable', source: 'platform' });
    expect(isKruntimesError(error)).toBe(true);
    expect(isKruntimesError(error, 'OwnerUnavailable')).toBe(true);
    expect(isKruntimesError(error, 'Forbidden')).toBe(false);
    expect(isKruntimesError(cause)).toBe(false);
  });

  it('rebuilds from a wire code; unknown codes become Internal', () => {
    expect(errorFromCode('Forbidden', 'no').code).toBe('Forbidden');
    expect(errorFromCode('SomethingNew', 'no').code).toBe('Internal');
    expect(errorFromCode('toString', 'no').code).toBe('Internal');
  });
});
