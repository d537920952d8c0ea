import type { RunStatus } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';

/**
 * The ownership epoch of a Run ("Fencing" in docs/lifecycle.md): which attempt runs on which exact Pod.
 * A Pod name can be reused by a new Pod; its UID cannot, so the UID is what is compared.
 */
export interface OwnershipEpoch {
  attempt: number;
  pod: string;
  podUID: string;
}

export function epochOf(status: Pick<RunStatus, 'attempt' | 'assignedPod' | 'assignedPodUID'> | undefined): OwnershipEpoch | undefined {
  const attempt = status?.attempt;
  const pod = status?.assignedPod;
  const podUID = status?.assignedPodUID;
  if (attempt === undefined || pod === undefined || podUID === undefined || pod === '' || podUID === '') return undefined;
  return { attempt, pod, podUID };
}

export function sameEpoch(a: OwnershipEpoch | undefined, b: OwnershipEpoch | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  return a.attempt === b.attempt && a.podUID === b.podUID && a.pod === b.pod;
}

export type OwnershipCheck = { owner: true } | { owner: false; reason: 'unassigned' | 'otherPod' | 'otherAttempt' };

/**
 * Whether the runtimed of `podUID`, working on `attempt`, still owns the Run as stored.
 * Every status write of runtimed re-checks this on the freshly read object: a writer that
 * no longer owns the attempt stops and never writes again.
 */
export function checkOwnership(status: RunStatus | undefined, podUID: string, attempt: number): OwnershipCheck {
  const epoch = epochOf(status);
  if (epoch === undefined) return { owner: false, reason: 'unassigned' };
  if (epoch.podUID !== podUID) return { owner: false, reason: 'otherPod' };
  if (epoch.attempt !== attempt) return { owner: false, reason: 'otherAttempt' };
  return { owner: true };
}

/** What a peer hop claims about the Run it forwards (FunctionRuntime PeerHop). */
export interface PeerExpectation {
  runUID: string;
  attempt: number;
  podUID: string;
}

/**
 * The owner refuses a peer request on any mismatch with what it serves, so that recovery
 * can never route one Run to two assignments (typed EpochMismatch, HTTP 503 at the gateway).
 */
export function verifyPeerExpectation(expected: PeerExpectation, served: PeerExpectation): void {
  const mismatches = (['runUID', 'attempt', 'podUID'] as const).filter((field) => expected[field] !== served[field]);
  if (mismatches.length > 0) {
    throw new KruntimesError('EpochMismatch', `peer request expects another ${mismatches.join(', ')} than this owner serves`);
  }
}
