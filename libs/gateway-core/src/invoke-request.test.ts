import { BOUNDS, DEFAULTS } from '@kruntimes/api';
import { bearerToken } from '@kruntimes/authz';
import { KruntimesError } from '@kruntimes/errors';
import {
  checkContentLength,
  checkContentType,
  invocationIdOf,
  invocationTimeoutMs,
  parseInvoke,
  parseInvokePath,
  parseJsonBody,
  pathOf,
  traceContext,
} from './invoke-request.ts';
import type { ParsedInvoke, RequestHeaders } from './invoke-request.ts';

const UID = '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    if (error instanceof KruntimesError) return error.code;
    throw error;
  }
}

describe('parseInvokePath', () => {
  it.each([
    [`/v1/namespaces/demo/runtimes/python/functions/${UID}:invoke`, 'functions'],
    [`/v1/namespaces/demo/runtimes/python/runs/${UID}:invoke`, 'runs'],
    [`/v1/namespaces/a/runtimes/b-1/functions/${UID}:invoke`, 'functions'],
  ])('%s is an invoke of route %s', (path, route) => {
    expect(parseInvokePath(path)).toEqual({
      kind: 'invoke',
      target: { namespace: path.split('/')[3], runtime: path.split('/')[5], uid: UID, route },
    });
  });

  it.each([
    `/v1/namespaces/Demo/runtimes/python/functions/${UID}:invoke`,
    `/v1/namespaces/-demo/runtimes/python/functions/${UID}:invoke`,
    `/v1/namespaces/${'a'.repeat(64)}/runtimes/python/functions/${UID}:invoke`,
    `/v1/namespaces//runtimes/python/functions/${UID}:invoke`,
    `/v1/namespaces/demo/runtimes/1python/functions/${UID}:invoke`,
    `/v1/namespaces/demo/runtimes/py.thon/functions/${UID}:invoke`,
    `/v1/namespaces/demo/runtimes/python/functions/not-a-uid:invoke`,
    `/v1/namespaces/demo/runtimes/python/functions/${UID.toUpperCase()}:invoke`,
    `/v1/namespaces/de%6Do/runtimes/python/functions/${UID}:invoke`,
    '/v1/namespaces/demo/runtimes/python/functions/:invoke',
  ])('%s is malformed (400)', (path) => {
    expect(parseInvokePath(path).kind).toBe('malformed');
  });

  it.each([
    '/',
    '/v1',
    `/v1/namespaces/demo/runtimes/python/functions/${UID}`,
    `/v1/namespaces/demo/runtimes/python/functions/${UID}:call`,
    `/v1/namespaces/demo/runtimes/python/tasks/${UID}:invoke`,
    `/v1/namespaces/demo/runtimes/python/functions/${UID}:invoke/`,
    `/v2/namespaces/demo/runtimes/python/functions/${UID}:invoke`,
    `/v1/namespaces/demo/runtimes/python/functions/x/${UID}:invoke`,
  ])('%s is no route (404)', (path) => {
    expect(parseInvokePath(path)).toEqual({ kind: 'unknown' });
  });

  it('strips the query only', () => {
    expect(pathOf('/a/b?x=1')).toBe('/a/b');
    expect(pathOf('/a/b')).toBe('/a/b');
  });
});

describe('request headers', () => {
  it.each([
    [undefined, 'Unauthenticated'],
    ['', 'Unauthenticated'],
    ['Basic dXNlcjpwYXNz', 'Unauthenticated'],
    ['Bearer', 'Unauthenticated'],
    ['Bearer ', 'Unauthenticated'],
    ['Bearer a b', 'Unauthenticated'],
    ['Bearer eyJhbGciOi.JSUzI1-NiIs_In~R5cCI6+/IkpXVCJ9==', undefined],
  ])('Authorization %j -> %s', (header, code) => {
    expect(codeOf(() => bearerToken(header))).toBe(code);
  });

  it('returns the token', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
  });

  // RFC 7235 section 2.1: the auth-scheme is case-insensitive, as runtimed has always read it.
  it.each(['bearer abc.def', 'BEARER abc.def', 'bEaReR abc.def'])('accepts the scheme in any case: %j', (header) => {
    expect(bearerToken(header)).toBe('abc.def');
  });

  it.each([
    ['application/json', undefined],
    ['application/json; charset=utf-8', undefined],
    ['Application/JSON', undefined],
    [undefined, 'UnsupportedMediaType'],
    ['text/plain', 'UnsupportedMediaType'],
    ['application/jsonx', 'UnsupportedMediaType'],
    ['multipart/form-data', 'UnsupportedMediaType'],
  ])('Content-Type %j -> %s', (header, code) => {
    expect(
      codeOf(() => {
        checkContentType(header);
      }),
    ).toBe(code);
  });

  it.each([
    [undefined, undefined],
    ['0', undefined],
    [String(BOUNDS.requestBodyBytes), undefined],
    [String(BOUNDS.requestBodyBytes + 1), 'PayloadTooLarge'],
    ['99999999999999999999', 'PayloadTooLarge'],
    ['-1', 'InvalidRequest'],
    ['abc', 'InvalidRequest'],
  ])('Content-Length %j -> %s', (header, code) => {
    expect(
      codeOf(() => {
        checkContentLength(header, BOUNDS.requestBodyBytes);
      }),
    ).toBe(code);
  });

  it.each([
    ['abc-123', undefined],
    ['x'.repeat(128), undefined],
    ['x'.repeat(129), 'InvalidInvocationId'],
    ['', 'InvalidInvocationId'],
    ['has space', 'InvalidInvocationId'],
    ['caf\u00e9', 'InvalidInvocationId'],
  ])('invocation ID %j -> %s', (header, code) => {
    expect(codeOf(() => invocationIdOf(header, () => 'generated'))).toBe(code);
  });

  it('generates an invocation ID when none was sent and keeps a valid one', () => {
    expect(invocationIdOf(undefined, () => 'generated')).toBe('generated');
    expect(invocationIdOf('mine', () => 'generated')).toBe('mine');
  });

  it.each([
    [undefined, DEFAULTS.invocationTimeoutSeconds * 1000],
    ['1', 1000],
    ['0.25', 250],
    [String(BOUNDS.maxInvocationTimeoutSeconds), BOUNDS.maxInvocationTimeoutSeconds * 1000],
  ])('timeout %j -> %d ms', (header, ms) => {
    expect(invocationTimeoutMs(header)).toBe(ms);
  });

  it.each(['0', '-1', 'abc', '1e3', String(BOUNDS.maxInvocationTimeoutSeconds + 1), '0.0001', ''])('timeout %j is refused', (header) => {
    expect(codeOf(() => invocationTimeoutMs(header))).toBe('InvalidRequest');
  });
});

describe('parseJsonBody', () => {
  it.each([['{}'], ['[]'], ['null'], ['1'], ['"x"'], ['{"a":[1,2,{"b":null}]}']])('%s is JSON', (text) => {
    expect(parseJsonBody(Buffer.from(text))).toEqual(JSON.parse(text));
  });

  it.each([[''], ['{'], ['{a:1}'], ["{'a':1}"], ['undefined']])('%j is not JSON', (text) => {
    expect(codeOf(() => parseJsonBody(Buffer.from(text)))).toBe('InvalidRequest');
  });

  it('refuses invalid UTF-8', () => {
    expect(codeOf(() => parseJsonBody(Buffer.from([0x22, 0xff, 0x22])))).toBe('InvalidRequest');
  });
});

describe('traceContext', () => {
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  it.each([
    [valid, 'a=1,b=2', { traceparent: valid, tracestate: 'a=1,b=2' }],
    [valid, undefined, { traceparent: valid }],
    [valid, 'x'.repeat(513), { traceparent: valid }],
    [valid, 'a=1\n', { traceparent: valid }],
    [undefined, 'a=1', {}],
    ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', undefined, {}],
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', undefined, {}],
    ['ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', undefined, {}],
    ['00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', undefined, {}],
    [`${valid}-extra`, undefined, {}],
    ['garbage', 'a=1', {}],
  ])('traceparent %j tracestate %j', (traceparent, tracestate, expected) => {
    expect(traceContext(traceparent, tracestate)).toEqual(expected);
  });

  it('passes a future version with extra fields', () => {
    const future = '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever';
    expect(traceContext(future, undefined)).toEqual({ traceparent: future });
  });
});

describe('parseInvoke', () => {
  const path = `/v1/namespaces/demo/runtimes/python/functions/${UID}:invoke`;
  const target = { namespace: 'demo', runtime: 'python', uid: UID, route: 'functions' };
  const valid: RequestHeaders = { authorization: 'Bearer t0k3n', 'content-type': 'application/json', 'content-length': '2' };
  const limits = { bodyLimitBytes: 10 };
  const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  /** What a refusal is: its code, the route label, whether the target is known, the echoed invocation ID. */
  const refused = (code: string, route: string | undefined, withTarget: boolean, invocationId?: string) => ({
    ok: false,
    error: expect.objectContaining({ code }) as unknown,
    route,
    target: withTarget ? target : undefined,
    invocationId,
  });
  const cases: [string, string, string, RequestHeaders, unknown][] = [
    [
      'valid, no invocation ID: the gateway makes one; the default timeout',
      'POST',
      path,
      valid,
      { ok: true, request: { target, invocationId: undefined, token: 't0k3n', timeoutMs: DEFAULTS.invocationTimeoutSeconds * 1000 } },
    ],
    [
      "valid with the client's ID, a timeout and trace context",
      'POST',
      `/v1/namespaces/demo/runtimes/python/runs/${UID}:invoke`,
      { ...valid, 'x-kruntime-invocation-id': 'inv-1', 'x-kruntime-timeout-seconds': '1.5', traceparent: TRACEPARENT, tracestate: 'a=b' },
      {
        ok: true,
        request: {
          target: { ...target, route: 'runs' },
          invocationId: 'inv-1',
          token: 't0k3n',
          timeoutMs: 1500,
          traceparent: TRACEPARENT,
          tracestate: 'a=b',
        },
      },
    ],
    ['no route comes before the method', 'GET', '/v1/other', {}, refused('RouteNotFound', undefined, false)],
    [
      'the method on an invoke path: the route is known, the target not yet',
      'GET',
      path,
      valid,
      refused('MethodNotAllowed', 'functions', false),
    ],
    [
      'a malformed path comes before a malformed invocation ID',
      'POST',
      '/v1/namespaces/Demo/runtimes/python/functions/x:invoke',
      { ...valid, 'x-kruntime-invocation-id': '' },
      refused('InvalidRequest', undefined, false),
    ],
    [
      'a malformed invocation ID: a new one is echoed',
      'POST',
      path,
      { ...valid, 'x-kruntime-invocation-id': '' },
      refused('InvalidInvocationId', 'functions', true),
    ],
    [
      "no token; the client's valid ID is echoed",
      'POST',
      path,
      { ...valid, authorization: undefined, 'x-kruntime-invocation-id': 'inv-2' },
      refused('Unauthenticated', 'functions', true, 'inv-2'),
    ],
    ['the token before the media type', 'POST', path, { 'content-type': 'text/plain' }, refused('Unauthenticated', 'functions', true)],
    ['not JSON', 'POST', path, { ...valid, 'content-type': 'text/plain' }, refused('UnsupportedMediaType', 'functions', true)],
    [
      'a repeated header is read joined, as Node does',
      'POST',
      path,
      { ...valid, 'content-type': ['application/json', 'text/plain'] },
      refused('UnsupportedMediaType', 'functions', true),
    ],
    ['a length that is not a number', 'POST', path, { ...valid, 'content-length': 'ten' }, refused('InvalidRequest', 'functions', true)],
    ['a declared length over the limit', 'POST', path, { ...valid, 'content-length': '11' }, refused('PayloadTooLarge', 'functions', true)],
    [
      'the length before the timeout',
      'POST',
      path,
      { ...valid, 'content-length': '11', 'x-kruntime-timeout-seconds': '0' },
      refused('PayloadTooLarge', 'functions', true),
    ],
    [
      'a timeout out of bounds',
      'POST',
      path,
      { ...valid, 'x-kruntime-timeout-seconds': '0' },
      refused('InvalidRequest', 'functions', true),
    ],
  ];
  it.each(cases)('%s', (_name, method, requestPath, headers, expected) => {
    const parsed: ParsedInvoke = parseInvoke(method, requestPath, headers, limits);
    expect(parsed).toEqual(expected);
  });
});
