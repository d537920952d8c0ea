import type { Run, RunPhase } from '@kruntimes/api';
import type { ErrorCode } from '@kruntimes/errors';
import type { PeerPod } from '../peer-pods.ts';
import { invocationErrorCode, routeInvocation } from './route.ts';
import type { RouteInput } from './route.ts';

const SELF = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const UID = '33333333-3333-4333-8333-333333333333';
const OLD_UID = '44444444-4444-4444-8444-444444444444';

interface Shape {
  phase?: RunPhase;
  ready?: boolean;
  pod?: string;
  attempt?: number;
  task?: boolean;
  runtime?: string;
  deleting?: boolean;
  invocationTimeoutSeconds?: number;
}

function run(shape: Shape = {}): Run {
  const phase = shape.phase ?? 'Ready';
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'fn', namespace: 'ns', uid: UID, ...(shape.deleting === true ? { deletionTimestamp: '2026-12-02T12:00:00Z' } : {}) },
    spec: {
      runtime: shape.runtime ?? 'python',
      source: { inline: 'x' },
      mode:
        shape.task === true
          ? { task: {} }
          : {
              function: {
                handler: 'main:f',
                ...(shape.invocationTimeoutSeconds === undefined ? {} : { invocationTimeoutSeconds: shape.invocationTimeoutSeconds }),
              },
            },
    },
    status: {
      phase,
      attempt: shape.attempt ?? 2,
      ...(shape.pod === '' ? {} : { assignedPod: shape.pod === OTHER ? 'python-1' : 'python-0', assignedPodUID: shape.pod ?? SELF }),
      conditions: [
        {
          type: 'Ready',
          status: (shape.ready ?? phase === 'Ready') ? 'True' : 'False',
          reason: 'X',
          message: '',
          lastTransitionTime: '2026-12-02T12:00:00Z',
        },
      ],
    },
  };
}

const OWNER: PeerPod = { name: 'python-1', uid: OTHER, ip: '127.0.0.9', ready: true, deleting: false };
const held = (attempts: Record<number, string>): RouteInput['registrations'] => ({
  registrationFor: (runUid, attempt) => (runUid === UID ? attempts[attempt] : undefined),
});

function input(change: Partial<RouteInput> = {}): RouteInput {
  return {
    self: { podUID: SELF, runtime: 'python' },
    runUid: UID,
    peerHop: undefined,
    run: run(),
    registrations: held({ 2: 'reg-2' }),
    ownerPod: undefined,
    requestTimeoutMs: undefined,
    final: false,
    ...change,
  };
}

const hop = (expectedAttempt: number, expectedPodUid = SELF) => ({ expectedAttempt, expectedPodUid, fromPod: 'python-1' });
const refused = (code: ErrorCode, ownerUnreachable = false) => ({ type: 'refuse', code, ownerUnreachable });
const invoke = (registrationId: string, timeoutMs = 60_000) => ({ type: 'invoke', registrationId, attempt: 2, timeoutMs });
const recheck = { type: 'recheck' };

describe('routeInvocation: direct requests (gateway port)', () => {
  it.each<[string, Partial<RouteInput>, Record<string, unknown>]>([
    ['unknown UID: the Run may be new and not in this cache yet', { run: undefined }, recheck],
    ['unknown UID, last look', { run: undefined, final: true }, refused('RunNotFound')],
    ['the name now holds another UID', { runUid: OLD_UID }, refused('RunNotFound')],
    ['a task Run', { run: run({ task: true }) }, refused('RunNotFound')],
    ['a Run of another Runtime', { run: run({ runtime: 'bash' }) }, refused('RunNotFound')],
    ['Running (registering): Ready may only lag in this cache', { run: run({ phase: 'Running' }) }, recheck],
    ['Running on another Pod: Ready may only lag in this cache', { run: run({ phase: 'Running', pod: OTHER }) }, recheck],
    ['Scheduled: Ready may only lag in this cache', { run: run({ phase: 'Scheduled' }) }, recheck],
    ['Running, last look', { run: run({ phase: 'Running' }), final: true }, refused('RunNotReady')],
    ['Running but deleting', { run: run({ phase: 'Running', deleting: true }) }, refused('RunNotReady')],
    ['Running with no assignment', { run: run({ phase: 'Running', pod: '' }) }, refused('RunNotReady')],
    ['Pending (recovering)', { run: run({ phase: 'Pending', pod: '' }) }, refused('RunNotReady')],
    ['Ready phase but Ready=False (registration lost)', { run: run({ ready: false }) }, refused('RunNotReady')],
    ['Ready but deleting', { run: run({ deleting: true }) }, refused('RunNotReady')],
    ['terminal', { run: run({ phase: 'Succeeded' }) }, refused('RunNotReady')],
    ['Ready with no assignment', { run: run({ pod: '' }) }, refused('RunNotReady')],
    ['owned here with the registration of the cached attempt', {}, invoke('reg-2')],
    [
      'owned here: the smaller of request and Run timeouts',
      { requestTimeoutMs: 1_500, run: run({ invocationTimeoutSeconds: 3 }) },
      invoke('reg-2', 1_500),
    ],
    ['owned here: the Run timeout when the request has none', { run: run({ invocationTimeoutSeconds: 3 }) }, invoke('reg-2', 3_000)],
    ['owned here, registration of another attempt only', { registrations: held({ 1: 'reg-1' }) }, recheck],
    ['owned here, no registration, last look', { registrations: held({}), final: true }, refused('RunNotReady')],
    [
      'owned by a ready peer',
      { run: run({ pod: OTHER }), ownerPod: OWNER },
      { type: 'forward', owner: OWNER, attempt: 2, timeoutMs: 60_000 },
    ],
    ['owner Pod not in the cache', { run: run({ pod: OTHER }) }, recheck],
    ['owner Pod not in the cache, last look', { run: run({ pod: OTHER }), final: true }, refused('OwnerUnavailable', true)],
    [
      'owner Pod deleting (draining: a planned move, no Event)',
      { run: run({ pod: OTHER }), ownerPod: { ...OWNER, deleting: true } },
      refused('RunNotReady'),
    ],
    ['owner Pod not ready', { run: run({ pod: OTHER }), ownerPod: { ...OWNER, ready: false } }, refused('OwnerUnavailable', true)],
    ['owner Pod without an address', { run: run({ pod: OTHER }), ownerPod: { ...OWNER, ip: '' } }, refused('OwnerUnavailable', true)],
  ])('%s', (_name, change, expected) => {
    expect(routeInvocation(input(change))).toMatchObject(expected);
  });
});

describe('routeInvocation: peer hops (this runtimed is the expected owner; never forwarded again)', () => {
  it.each<[string, Partial<RouteInput>, Record<string, unknown>]>([
    ['exactly the epoch served here', { peerHop: hop(2) }, invoke('reg-2')],
    ['unknown UID: the Run may be new and not in this cache yet', { peerHop: hop(2), run: undefined }, recheck],
    ['unknown UID, last look', { peerHop: hop(2), run: undefined, final: true }, refused('RunNotFound')],
    ['expects another Pod', { peerHop: hop(2, OTHER) }, refused('EpochMismatch')],
    ['expects an older attempt', { peerHop: hop(1) }, refused('EpochMismatch')],
    ['expects a newer attempt than this cache shows', { peerHop: hop(3) }, recheck],
    ['expects a newer attempt, last look', { peerHop: hop(3), final: true }, refused('EpochMismatch')],
    ['expects the attempt registered here that this cache shows on another Pod', { peerHop: hop(2), run: run({ pod: OTHER }) }, recheck],
    [
      'cache shows another Pod, nothing held here',
      { peerHop: hop(2), run: run({ pod: OTHER }), registrations: held({}) },
      refused('EpochMismatch'),
    ],
    ['cache shows another Pod, last look', { peerHop: hop(2), run: run({ pod: OTHER }), final: true }, refused('EpochMismatch')],
    ['registered here, not yet Ready in this cache', { peerHop: hop(2), run: run({ phase: 'Running' }) }, recheck],
    ['not Ready and nothing held', { peerHop: hop(2), run: run({ phase: 'Running' }), registrations: held({}) }, refused('RunNotReady')],
    ['not Ready, last look', { peerHop: hop(2), run: run({ phase: 'Running' }), final: true }, refused('RunNotReady')],
    ['Ready here but no registration held yet', { peerHop: hop(2), registrations: held({}) }, recheck],
    ['Ready here but no registration held, last look', { peerHop: hop(2), registrations: held({}), final: true }, refused('RunNotReady')],
    ['deleting', { peerHop: hop(2), run: run({ deleting: true }), final: true }, refused('RunNotReady')],
  ])('%s', (_name, change, expected) => {
    expect(routeInvocation(input(change))).toMatchObject(expected);
  });
});

describe('invocationErrorCode: what the caller hears from a Runtime Server failure', () => {
  it.each<[ErrorCode, boolean, ErrorCode]>([
    ['InvocationInFlight', true, 'InvocationInFlight'],
    ['FunctionFailed', true, 'FunctionFailed'],
    ['FunctionOutputInvalid', true, 'FunctionOutputInvalid'],
    ['InvocationTimeout', true, 'InvocationTimeout'],
    ['PayloadTooLarge', true, 'PayloadTooLarge'],
    ['InvalidRequest', true, 'InvalidRequest'],
    ['InvalidInvocationId', true, 'InvalidInvocationId'],
    ['RegistrationLost', true, 'RegistrationLost'],
    ['RegistrationNotFound', true, 'RunNotReady'],
    ['StaleAttempt', true, 'RunNotReady'],
    ['Forbidden', true, 'Internal'],
    ['Internal', true, 'Internal'],
    ['OwnerUnavailable', false, 'RunNotReady'],
    ['InvocationTimeout', false, 'InvocationTimeout'],
  ])('%s (answered: %s) -> %s', (code, answered, expected) => {
    expect(invocationErrorCode(code, answered)).toBe(expected);
  });
});
