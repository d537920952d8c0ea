import type { Run, RunPhase } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import type { ErrorCode } from '@kruntimes/errors';
import { verifyPeerExpectation } from '@kruntimes/fencing';
import { acceptsInvokes, isConditionTrue, mayTurnReady } from '@kruntimes/run-state';
import type { PeerPod } from '../peer-pods.ts';
import type { Registrations } from './registrations.ts';
import type { PeerHopView } from './request.ts';
import { effectiveTimeoutMs } from './request.ts';

export interface RouteInput {
  self: { podUID: string; runtime: string };
  runUid: string;
  peerHop: PeerHopView | undefined;
  /** The cached Run with this UID that is the current object of its name, if any. */
  run: ReadonlyDeep<Run> | undefined;
  /** The registrations this runtimed holds. */
  registrations: Pick<Registrations, 'registrationFor'>;
  /** The cached Pod with the Run's assignedPodUID, if any. */
  ownerPod: PeerPod | undefined;
  requestTimeoutMs: number | undefined;
  /**
   * The last look: what might only be a watch that lags (a newer attempt named by a
   * peer, a registration not seen yet) is now answered as a refusal.
   */
  final: boolean;
}

export type Route =
  /** This runtimed owns the epoch: invoke its Runtime Server with this registration. */
  | { type: 'invoke'; registrationId: string; attempt: number; timeoutMs: number }
  /** Another Pod owns it: forward once, expecting exactly this epoch there. */
  | { type: 'forward'; owner: PeerPod; attempt: number; timeoutMs: number }
  /** The cache may lag behind the truth: look again shortly (bounded), then decide for good. */
  | { type: 'recheck'; why: string }
  | { type: 'refuse'; code: ErrorCode; message: string; ownerUnreachable: boolean };

const refuse = (code: ErrorCode, message: string, ownerUnreachable = false): Route => ({ type: 'refuse', code, message, ownerUnreachable });

/**
 * Where one invocation goes, from the informer caches only ("Path of a request" in docs/invoke-contract.md): an
 * unknown UID is 404, after a bounded second look; a Run that does not accept invokes (run-state decides) is 503, after
 * a bounded second look when its owner is bringing it up;
 * the owner invokes only when it holds the registration of exactly the cached attempt;
 * a request from a peer is served only if it names exactly the epoch served here and is
 * never forwarded again; anyone else forwards once to a ready, non-deleting owner.
 */
export function routeInvocation(input: RouteInput): Route {
  const { run, self, peerHop, final } = input;
  if (run?.metadata.uid !== input.runUid) {
    // A Run created a moment ago (a client that invokes right after its create) may not be
    // in this watch's cache yet: look again, bounded, before a 404 the caller would trust.
    if (run === undefined && !final) return { type: 'recheck', why: 'the Run may be new and not in this cache yet' };
    return refuse('RunNotFound', `no Run with UID ${input.runUid} in this namespace`);
  }
  const fn = run.spec.mode.function;
  if (fn === undefined || run.spec.runtime !== self.runtime) {
    return refuse('RunNotFound', `Run ${run.metadata.name ?? ''} is not a function Run of Runtime ${self.runtime}`);
  }
  const status = run.status;
  const phase = status?.phase ?? 'Pending';
  const deleting = run.metadata.deletionTimestamp !== undefined;
  const epoch: CachedEpoch = {
    phase,
    ready: acceptsInvokes(phase, isConditionTrue(status?.conditions, 'Ready'), deleting),
    deleting,
    attempt: status?.attempt ?? 0,
    assigned: status?.assignedPodUID ?? '',
    assignedPod: status?.assignedPod,
    timeoutMs: effectiveTimeoutMs(input.requestTimeoutMs, fn.invocationTimeoutSeconds),
    notReady: () => refuse('RunNotReady', `Run ${run.metadata.name ?? ''} is not ready (${phase}${deleting ? ', deleting' : ''})`),
  };
  return peerHop === undefined ? routeDirect(input, epoch) : routePeerHop(input, peerHop, epoch);
}

/** What routing reads of the cached Run, once it is known to be a function Run of this Runtime. */
interface CachedEpoch {
  phase: RunPhase;
  /** Whether it accepts invokes (run-state decides). */
  ready: boolean;
  deleting: boolean;
  attempt: number;
  /** status.assignedPodUID, '' when none. */
  assigned: string;
  assignedPod: string | undefined;
  timeoutMs: number;
  notReady: () => Route;
}

/** A request from a peer: this runtimed is the owner the peer found in its cache. */
function routePeerHop(input: RouteInput, peerHop: PeerHopView, epoch: CachedEpoch): Route {
  const { self, final, registrations } = input;
  const { attempt, notReady } = epoch;
  if (peerHop.expectedPodUid !== self.podUID)
    return refuse('EpochMismatch', `the peer expects Pod ${peerHop.expectedPodUid}, this is Pod ${self.podUID}`);
  const heldForExpected = registrations.registrationFor(input.runUid, peerHop.expectedAttempt) !== undefined;
  try {
    verifyPeerExpectation(
      { runUID: input.runUid, attempt: peerHop.expectedAttempt, podUID: peerHop.expectedPodUid },
      { runUID: input.runUid, attempt, podUID: epoch.assigned },
    );
  } catch (error) {
    // The peer's watch may be ahead of this one: it names a newer attempt, or the one
    // this runtimed just registered.
    if (!final && (heldForExpected || peerHop.expectedAttempt > attempt))
      return { type: 'recheck', why: 'the peer expects an epoch this cache has not seen yet' };
    return refuse('EpochMismatch', error instanceof Error ? error.message : 'the peer expects another epoch');
  }
  if (!epoch.ready)
    return !final && heldForExpected ? { type: 'recheck', why: 'registered here, not yet Ready in this cache' } : notReady();
  return invokeHere(attempt, epoch.timeoutMs, registrations.registrationFor(input.runUid, attempt), final, notReady);
}

/** A request from the gateway: invoke here when this Pod owns the epoch, else forward once to its owner. */
function routeDirect(input: RouteInput, epoch: CachedEpoch): Route {
  const { self, final } = input;
  const { attempt, assigned, notReady } = epoch;
  if (!epoch.ready) {
    // The owner may have written Ready a moment ago (a client that watched for Ready and
    // invokes at once): look again, bounded, before a 503 that the caller would have to retry.
    const comingUp = mayTurnReady(epoch.phase) && assigned !== '' && !epoch.deleting;
    return !final && comingUp
      ? { type: 'recheck', why: 'the owner is bringing the Run up; this cache may not show Ready yet' }
      : notReady();
  }
  if (assigned === '') return notReady();
  if (assigned === self.podUID)
    return invokeHere(attempt, epoch.timeoutMs, input.registrations.registrationFor(input.runUid, attempt), final, notReady);
  const owner = input.ownerPod;
  if (owner === undefined) {
    if (!final) return { type: 'recheck', why: 'the owner Pod is not in the Pod cache' };
    return refuse('OwnerUnavailable', `the owner Pod ${epoch.assignedPod ?? assigned} no longer exists`, true);
  }
  // A deleting owner drains: it hands the Run over (a planned move), so this is "not now",
  // not an owner lost, and records no OwnerUnreachable Event.
  if (owner.deleting) return refuse('RunNotReady', `the owner Pod ${owner.name} is draining; the Run moves to another Pod`);
  if (!owner.ready || owner.ip === '') return refuse('OwnerUnavailable', `the owner Pod ${owner.name} is not ready`, true);
  return { type: 'forward', owner, attempt, timeoutMs: epoch.timeoutMs };
}

function invokeHere(attempt: number, timeoutMs: number, registrationId: string | undefined, final: boolean, notReady: () => Route): Route {
  if (registrationId !== undefined) return { type: 'invoke', registrationId, attempt, timeoutMs };
  // Assigned here and Ready, but this process holds no registration for the attempt
  // (yet: e.g. it restarted and is registering the same attempt again).
  return final ? notReady() : { type: 'recheck', why: 'Ready here but the registration is not held (yet)' };
}

/**
 * What the caller hears when the local Runtime Server refused or failed an invocation.
 * Its own answers pass through (in flight, handler failed, timeout, bounds); a
 * registration it no longer holds means the Run is not ready here; anything it did not
 * answer (unreachable) is an unknown outcome, reported as not ready without a retry.
 */
export function invocationErrorCode(code: ErrorCode, answered: boolean): ErrorCode {
  if (!answered) return code === 'InvocationTimeout' ? 'InvocationTimeout' : 'RunNotReady';
  if (PASSED_THROUGH.has(code)) return code;
  return GONE.has(code) ? 'RunNotReady' : 'Internal';
}

const PASSED_THROUGH: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'InvocationInFlight',
  'FunctionFailed',
  'FunctionOutputInvalid',
  'InvocationTimeout',
  'PayloadTooLarge',
  'InvalidRequest',
  'InvalidInvocationId',
  'RegistrationLost',
]);
const GONE: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['RegistrationNotFound', 'StaleAttempt']);
