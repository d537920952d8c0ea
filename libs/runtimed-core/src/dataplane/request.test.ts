import { isKruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { bearerToken } from '@kruntimes/authz';
import { effectiveTimeoutMs, validateInvocation } from './request.ts';
import type { DataplanePort, IncomingInvocation } from './request.ts';

const UID = '33333333-3333-4333-8333-333333333333';
const POD = '11111111-1111-4111-8111-111111111111';
const SELF = { namespace: 'ns', runtime: 'python' };
const OK: IncomingInvocation = {
  namespace: 'ns',
  runtime: 'python',
  runUid: UID,
  invocationId: 'inv-1',
  payload: Buffer.from('{"a":1}'),
  timeoutMs: undefined,
  peerHop: undefined,
};
const HOP = { expectedAttempt: 1, expectedPodUid: POD, fromPod: 'python-1' };

function codeOf(run: () => unknown): ErrorCode | undefined {
  try {
    run();
  } catch (error) {
    if (isKruntimesError(error)) return error.code;
    throw error;
  }
  return undefined;
}

describe('validateInvocation', () => {
  it.each<[string, Partial<IncomingInvocation>, DataplanePort, ErrorCode | undefined]>([
    ['a well-formed direct request', {}, 'grpc', undefined],
    ['an empty payload (JSON null)', { payload: new Uint8Array() }, 'grpc', undefined],
    ['a well-formed peer hop on the peer port', { peerHop: HOP }, 'peer', undefined],
    ['a peer hop on the gateway port', { peerHop: HOP }, 'grpc', 'InvalidRequest'],
    ['a direct request on the peer port', {}, 'peer', 'InvalidRequest'],
    ['another namespace', { namespace: 'other' }, 'grpc', 'InvalidRequest'],
    ['another Runtime', { runtime: 'bash' }, 'grpc', 'InvalidRequest'],
    ['a UID that is not a UUID', { runUid: 'nope' }, 'grpc', 'InvalidRequest'],
    ['an empty invocation ID', { invocationId: '' }, 'grpc', 'InvalidInvocationId'],
    ['an invocation ID with a space', { invocationId: 'a b' }, 'grpc', 'InvalidInvocationId'],
    ['an invocation ID of 129 bytes', { invocationId: 'x'.repeat(129) }, 'grpc', 'InvalidInvocationId'],
    ['a payload of 1 MiB + 1', { payload: new Uint8Array(1024 * 1024 + 1) }, 'grpc', 'PayloadTooLarge'],
    ['a payload that is not JSON', { payload: Buffer.from('{') }, 'grpc', 'InvalidRequest'],
    ['a payload that is not UTF-8', { payload: Uint8Array.from([0x22, 0xff, 0x22]) }, 'grpc', 'InvalidRequest'],
    ['a zero timeout', { timeoutMs: 0 }, 'grpc', 'InvalidRequest'],
    ['a peer hop with attempt 0', { peerHop: { ...HOP, expectedAttempt: 0 } }, 'peer', 'InvalidRequest'],
    ['a peer hop without a Pod UID', { peerHop: { ...HOP, expectedPodUid: '' } }, 'peer', 'InvalidRequest'],
  ])('%s', (_name, change, port, expected) => {
    expect(
      codeOf(() => {
        validateInvocation({ ...OK, ...change }, SELF, port);
      }),
    ).toBe(expected);
  });
});

describe('bearerToken', () => {
  it.each<[string | undefined, string]>([
    ['Bearer abc.def-ghi_jkl', 'abc.def-ghi_jkl'],
    ['bearer tok==', 'tok=='],
    [undefined, 'Unauthenticated'],
    ['', 'Unauthenticated'],
    ['Basic dXNlcjpwdw==', 'Unauthenticated'],
    ['Bearer', 'Unauthenticated'],
    ['Bearer two words', 'Unauthenticated'],
  ])('%j', (header, expected) => {
    let token: string | undefined;
    const code = codeOf(() => (token = bearerToken(header)));
    expect(code ?? token).toBe(expected);
  });

  it('never echoes the credential in its message', () => {
    expect(() => bearerToken('Token secret-value')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret-value') as unknown }) as Error,
    );
  });
});

describe('effectiveTimeoutMs', () => {
  it.each<[number | undefined, number | undefined, number]>([
    [undefined, undefined, 60_000],
    [undefined, 5, 5_000],
    [2_000, 5, 2_000],
    [9_000, 5, 5_000],
    [90_000, undefined, 60_000],
  ])('request %j, Run %j s: %d ms', (request, run, expected) => {
    expect(effectiveTimeoutMs(request, run)).toBe(expected);
  });
});
