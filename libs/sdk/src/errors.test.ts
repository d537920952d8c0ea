import { ERROR_CODES } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { codeForHttpStatus, errorFromResponse } from './errors.ts';

describe('errorFromResponse', () => {
  // Every dataplane row of the table under "Response" in docs/invoke-contract.md, as the gateway sends it.
  const rows: [ErrorCode, 'platform' | 'function'][] = [
    ['InvalidRequest', 'platform'],
    ['InvalidInvocationId', 'platform'],
    ['UnsupportedMediaType', 'platform'],
    ['Unauthenticated', 'platform'],
    ['Forbidden', 'platform'],
    ['RunNotFound', 'platform'],
    ['PayloadTooLarge', 'platform'],
    ['InvocationInFlight', 'platform'],
    ['FunctionFailed', 'function'],
    ['FunctionOutputInvalid', 'function'],
    ['Internal', 'platform'],
    ['AuthorizationUnavailable', 'platform'],
    ['RunNotReady', 'platform'],
    ['OwnerUnavailable', 'platform'],
    ['InvocationTimeout', 'platform'],
  ];
  it.each(rows)('a %s body keeps its code, status, source and message', (code, source) => {
    const status = ERROR_CODES[code].http;
    const error = errorFromResponse(status, JSON.stringify({ invocationId: 'id-9', error: { code, message: 'why', source } }), 'id-mine');
    expect({
      code: error.code,
      httpStatus: error.httpStatus,
      source: error.source,
      invocationId: error.invocationId,
      message: error.message,
    }).toEqual({
      code,
      httpStatus: status,
      source,
      invocationId: 'id-9',
      message: 'why',
    });
    expect(error.local).toBe(false);
  });

  it.each([
    ['AuthorizationUnavailable', 'platform', true],
    ['AuthorizationUnavailable', 'function', false],
    ['RunNotReady', 'platform', false],
    ['OwnerUnavailable', 'platform', false],
    ['Forbidden', 'platform', false],
    ['Internal', 'platform', false],
  ] as const)('%s from the %s is retryable: %s', (code, source, retryable) => {
    const error = errorFromResponse(ERROR_CODES[code].http, JSON.stringify({ error: { code, message: 'm', source } }), 'id');
    expect(error.retryable).toBe(retryable);
  });

  it('a bare 503 is not retryable: nothing says the function did not run', () => {
    expect(errorFromResponse(503, '<html>unavailable</html>', 'id').retryable).toBe(false);
  });

  it('reads an unknown code as the HTTP status says', () => {
    const error = errorFromResponse(503, JSON.stringify({ error: { code: 'SomethingNew', message: 'm', source: 'platform' } }), 'id');
    expect(error.code).toBe('RunNotReady');
    expect(error.invocationId).toBe('id');
  });

  it('reads a body that is not JSON (a proxy page) by its HTTP status', () => {
    const error = errorFromResponse(502, '<html>bad gateway</html>', 'id');
    expect(error).toMatchObject({ code: 'RunNotReady', source: 'platform', httpStatus: 502, invocationId: 'id' });
    expect(error.message).toMatch(/HTTP 502/);
  });

  it('takes the source from the table when the body has none', () => {
    expect(errorFromResponse(500, JSON.stringify({ error: { code: 'FunctionFailed', message: 'boom' } }), 'id').source).toBe('function');
  });
});

describe('codeForHttpStatus', () => {
  it.each([
    [400, 'InvalidRequest'],
    [401, 'Unauthenticated'],
    [403, 'Forbidden'],
    [404, 'RunNotFound'],
    [405, 'MethodNotAllowed'],
    [413, 'PayloadTooLarge'],
    [415, 'UnsupportedMediaType'],
    [429, 'InvocationInFlight'],
    [500, 'Internal'],
    [501, 'Unimplemented'],
    [502, 'RunNotReady'],
    [503, 'RunNotReady'],
    [504, 'InvocationTimeout'],
    [418, 'Internal'],
  ] as const)('%d -> %s', (status, code) => {
    expect(codeForHttpStatus(status)).toBe(code);
  });
});
