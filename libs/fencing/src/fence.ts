import type { OwnershipEpoch } from './epoch.ts';

/** What stale-recovery observed about the old owner of an epoch. */
export interface OwnerEvidence {
  /** The Pod with the epoch's exact UID exists (a Pod of the same name and another UID does not count). */
  podExists: boolean;
  /** That Pod has a deletionTimestamp. */
  podDeleting: boolean;
  /** That Pod is still among the ready endpoints of the Runtime's Service. */
  podInServiceEndpoints: boolean;
  /** The old runtimed confirmed UnregisterFunction (or task stop) for exactly this epoch. */
  ownerConfirmedRelease: OwnershipEpoch | undefined;
  /** The Pod's Lease expired: evidence that recovery should start, never a proof. */
  leaseExpired: boolean;
  /**
   * The owner keeps renewing its Lease but has stopped listing this epoch among the Runs
   * it holds (for longer than a grace): evidence, never a proof (it may list it again).
   */
  ownerStoppedReporting?: boolean;
}

export type FenceProof = 'podGone' | 'podDeletingAndUnrouted' | 'ownerConfirmedRelease';

export type FenceDecision = { fenced: true; proof: FenceProof } | { fenced: false; suspect: boolean; waitingFor: string };

/**
 * The fence ("Fencing" in docs/lifecycle.md): a new attempt may start only once one of three proofs holds.
 * A stale Lease or a Pod that looks unready proves nothing: a frozen Pod can come back and
 * serve, so those only make the Run `suspect` (mark it Recovering, keep watching).
 */
export function decideFence(epoch: OwnershipEpoch, evidence: OwnerEvidence): FenceDecision {
  if (!evidence.podExists) return { fenced: true, proof: 'podGone' };
  const released = evidence.ownerConfirmedRelease;
  if (released?.attempt === epoch.attempt && released.podUID === epoch.podUID) {
    return { fenced: true, proof: 'ownerConfirmedRelease' };
  }
  if (evidence.podDeleting && !evidence.podInServiceEndpoints) return { fenced: true, proof: 'podDeletingAndUnrouted' };
  if (evidence.podDeleting) return { fenced: false, suspect: true, waitingFor: 'the deleting Pod to leave the Service endpoints' };
  if (evidence.leaseExpired)
    return { fenced: false, suspect: true, waitingFor: 'the Pod to be deleted or its owner to confirm the release' };
  if (evidence.ownerStoppedReporting === true)
    return { fenced: false, suspect: true, waitingFor: 'the owner to hold the Run again or confirm its release' };
  return { fenced: false, suspect: false, waitingFor: 'evidence that the owner is lost' };
}
