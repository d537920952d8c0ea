import { ApiException } from '@kubernetes/client-node';
import { ERROR_CODES, KruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { InvocationError, InvocationTransportError } from '@kruntimes/sdk';
import { CliError, EXIT, describeError, exitCodeFor, exitCodeForErrorCode, exitCodeForHttpStatus } from './exit-codes.ts';

describe('exit codes', () => {
  it('are the documented table', () => {
    expect(EXIT).toEqual({
      ok: 0,
      functionError: 1,
      usage: 2,
      notFound: 3,
      unauthorized: 4,
      unavailable: 5,
      lockMismatch: 6,
      notConfirmed: 7,
      interrupted: 130,
    });
  });

  const byCode: [ErrorCode, number][] = [
    ['FunctionFailed', 1],
    ['FunctionOutputInvalid', 1],
    ['InvalidRequest', 2],
    ['InvalidInvocationId', 2],
    ['UnsupportedMediaType', 2],
    ['PayloadTooLarge', 2],
    ['ArtifactNotDeclared', 2],
    ['ArtifactTooLarge', 2],
    ['RunNotFound', 3],
    ['Unauthenticated', 4],
    ['Forbidden', 4],
    ['InvocationInFlight', 5],
    ['AuthorizationUnavailable', 5],
    ['RunNotReady', 5],
    ['OwnerUnavailable', 5],
    ['InvocationTimeout', 5],
    ['Internal', 5],
    ['RouteNotFound', 5],
    ['ArtifactStoreUnavailable', 5],
    ['OriginConflict', 2],
    ['LockMismatch', 6],
  ];
  it.each(byCode)('gateway code %s -> exit %d', (code, exit) => {
    expect(exitCodeForErrorCode(code)).toBe(exit);
    expect(exitCodeFor(new InvocationError({ code, message: 'm', invocationId: 'i', httpStatus: ERROR_CODES[code].http }))).toBe(exit);
  });

  it('every function-sourced code is exit 1, and only those', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      expect(exitCodeForErrorCode(code) === EXIT.functionError).toBe(ERROR_CODES[code].source === 'function');
    }
  });

  it.each([
    [400, 2],
    [422, 2],
    [401, 4],
    [403, 4],
    [404, 3],
    [409, 5],
    [500, 5],
    [503, 5],
  ])('API server HTTP %d -> exit %d', (status, exit) => {
    expect(exitCodeForHttpStatus(status)).toBe(exit);
    expect(exitCodeFor(new ApiException(status, 'm', '{}', {}))).toBe(exit);
  });

  it('maps the other errors', () => {
    expect(exitCodeFor(new CliError(EXIT.notFound, 'x'))).toBe(3);
    expect(exitCodeFor(new InvocationTransportError({ kind: 'tls', requestMayHaveBeenSent: false, invocationId: 'i', message: 'm' }))).toBe(
      5,
    );
    expect(exitCodeFor(new Error('boom'))).toBe(5);
    expect(exitCodeFor(new KruntimesError('ArtifactStoreUnavailable', 'Secret ns/s not found'))).toBe(5);
    expect(exitCodeFor(new KruntimesError('Forbidden', 'get secrets'))).toBe(4);
  });

  it('describes errors in one line, never with client-node headers', () => {
    const api = new ApiException(
      403,
      'HTTP-Code: 403 ... Headers: {"authorization":"x"}',
      JSON.stringify({ kind: 'Status', message: 'runs "r" is forbidden' }),
      {},
    );
    expect(describeError(api)).toBe('the API server answered HTTP 403: runs "r" is forbidden');
    expect(
      describeError(
        new InvocationError({ code: 'FunctionFailed', message: 'ValueError', invocationId: 'i-1', httpStatus: 500, source: 'function' }),
      ),
    ).toBe('FunctionFailed (function, HTTP 500): ValueError [invocation i-1]');
    expect(
      describeError(
        new InvocationTransportError({ kind: 'timeout', requestMayHaveBeenSent: true, invocationId: 'i-2', message: 'no answer' }),
      ),
    ).toMatch(/may have been sent/);
  });
});
