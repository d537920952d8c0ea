import { RUN_REASONS } from '@kruntimes/api';
import type { RetryPolicy, RunModeKind, RunPhase } from '@kruntimes/api';
import { decideFence } from '@kruntimes/fencing';
import type { FenceProof, OwnerEvidence, OwnershipEpoch } from '@kruntimes/fencing';
import { classify, decideRetry, hasOwner } from '@kruntimes/run-state';
import type { AutomaticRetryPolicy } from '@kruntimes/run-state';

/** What stale-recovery knows about the Run itself (from its cached object). */
export interface RunFacts {
  phase: RunPhase;
  mode: RunModeKind;
  cancelRequested: boolean;
  retryPolicy: RetryPolicy | undefined;
  /** The first attempt of the current retry budget (a continuation after input starts a new one). */
  retryBudgetStart: number;
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
  /** The registration-cleanup finalizer is present. */
  cleanupFinalizer: boolean;
  /** The reason of the Run's Ready condition (Recovering once stale-recovery marked it). */
  readyReason: string | undefined;
  /** The ownership epoch (attempt, Pod, Pod UID); undefined when unassigned. */
  epoch: OwnershipEpoch | undefined;
  /**
   * The organisation's retry policy for the Run's namespace (resolveAutomaticRetryPolicy);
   * undefined: not looked up yet, taken as allowed (it only matters once a requeue is decided).
   */
  automaticRetry?: AutomaticRetryPolicy;
}

/** The evidence about the owner, and whether it is draining (it hands its Runs over itself). */
export interface RecoveryEvidence extends OwnerEvidence {
  /**
   * The owner Pod is deleting but its grace period has not ended, and its runtimed still
   * renews its Lease and lists the Run: it drains (docs/operations.md "Drain"), handing
   * function Runs over and letting tasks finish. Not lost: a requeue now would count the
   * planned move against maxAttempts and race the owner's own handover.
   */
  ownerDraining?: boolean;
}

/** Why stale-recovery suspects the owner (metrics label `cause` while not fenced). */
export type Suspicion = 'podDeleting' | 'leaseExpired' | 'ownerStoppedReporting';
/** The `cause` label of kruntimes_recoveries_total. */
export type RecoveryCause = FenceProof | Suspicion | 'unassigned';

export type RecoveryAction =
  /** Nothing to do (healthy owner, not our business, or the owner is finishing by itself). */
  | { type: 'none'; why: string }
  /** Suspect, already marked Recovering: look again later; no new attempt before the fence. */
  | { type: 'wait'; cause: Suspicion; why: string }
  /** Suspect and not fenced: Ready=False Recovering, nothing else. */
  | { type: 'markRecovering'; cause: Suspicion; message: string }
  /** The suspicion cleared (a frozen owner came back): undo Recovering. */
  | { type: 'recovered'; message: string }
  /** Fenced, retry allowed: back to Pending with attempt + 1 after the backoff. */
  | { type: 'requeue'; cause: FenceProof; nextAttempt: number; backoffSeconds: number; message: string }
  /** Fenced, nothing proves what the code did: Interrupted. */
  | { type: 'interrupt'; cause: FenceProof; reason: typeof RUN_REASONS.ownerLost | typeof RUN_REASONS.cancelUnconfirmed; message: string }
  /** Fenced, no attempts left: Failed RetriesExhausted. */
  | { type: 'fail'; cause: FenceProof; message: string }
  /** Fenced with proof that the code is gone, and cancel was requested: Cancelled. */
  | { type: 'cancel'; cause: FenceProof; message: string }
  /** Deleting (or finished by us) and no Pod-local registration can serve any more: drop the finalizer. */
  | { type: 'removeFinalizer'; cause: FenceProof | 'unassigned'; message: string };

const PROOF_TEXT: Record<FenceProof, string> = {
  podGone: 'the owner Pod no longer exists',
  podDeletingAndUnrouted: 'the owner Pod is deleting and out of the Service endpoints',
  ownerConfirmedRelease: 'the owner confirmed it released this attempt',
};

/**
 * The whole of stale-recovery's judgement, pure: from what is known about a Run and the
 * evidence about its owner, the one action to take (docs/lifecycle.md and "How recovery works" in docs/operations.md). The
 * reconciler gathers the evidence and performs the action as one fenced write.
 */
export function decideRecovery(run: RunFacts, evidence: RecoveryEvidence): RecoveryAction {
  const { epoch } = run;
  if (run.deleting) {
    if (!run.cleanupFinalizer) return { type: 'none', why: 'deleting without the cleanup finalizer' };
    // Unassigned: the only Pod-local state there ever was belonged to an epoch that was fenced before the requeue.
    if (epoch === undefined) return { type: 'removeFinalizer', cause: 'unassigned', message: 'no Pod holds the Run' };
    const fence = decideFence(epoch, evidence);
    if (!fence.fenced) return { type: 'none', why: `the owner finalizes the Run (or we wait for ${fence.waitingFor})` };
    return { type: 'removeFinalizer', cause: fence.proof, message: PROOF_TEXT[fence.proof] };
  }
  if (epoch === undefined) return { type: 'none', why: 'no owner' };
  if (!hasOwner(run.phase)) {
    // A Run that ended (possibly by our own write) while its owner was lost keeps the
    // finalizer the owner can no longer remove.
    if (classify(run.phase) === 'terminal' && run.cleanupFinalizer) {
      const fence = decideFence(epoch, evidence);
      if (fence.fenced) return { type: 'removeFinalizer', cause: fence.proof, message: PROOF_TEXT[fence.proof] };
    }
    return { type: 'none', why: `phase ${run.phase} has no owner` };
  }

  const fence = decideFence(epoch, evidence);
  // Only the owner's own confirmation (it released and then did not write) or the Pod's
  // end overrides a drain; a Pod out of the Service endpoints is what a drain looks like.
  if (evidence.ownerDraining === true && !(fence.fenced && fence.proof !== 'podDeletingAndUnrouted')) {
    return { type: 'none', why: 'the owner Pod is draining within its grace period and hands the Run over itself' };
  }
  const recovering = run.readyReason === RUN_REASONS.recovering;
  if (!fence.fenced) {
    if (!fence.suspect) {
      return recovering
        ? { type: 'recovered', message: 'the owner renews its Lease and holds the Run again' }
        : { type: 'none', why: 'the owner is healthy' };
    }
    const cause: Suspicion = evidence.podDeleting ? 'podDeleting' : evidence.leaseExpired ? 'leaseExpired' : 'ownerStoppedReporting';
    const message = `${SUSPICION_TEXT[cause]}; waiting for ${fence.waitingFor}`;
    return recovering ? { type: 'wait', cause, why: message } : { type: 'markRecovering', cause, message };
  }

  const proof = fence.proof;
  const text = `attempt ${String(epoch.attempt)} on Pod ${epoch.pod}: ${PROOF_TEXT[proof]}`;
  if (run.cancelRequested) {
    // Only the owner's confirmation or the Pod's disappearance shows the code stopped.
    if (proof === 'podGone' || proof === 'ownerConfirmedRelease') return { type: 'cancel', cause: proof, message: `cancelled: ${text}` };
    return {
      type: 'interrupt',
      cause: proof,
      reason: RUN_REASONS.cancelUnconfirmed,
      message: `cancel requested but never confirmed by the owner: ${text}`,
    };
  }
  const decision = decideRetry(
    run.mode,
    run.retryPolicy,
    epoch.attempt,
    classify(run.phase) === 'assigned' ? 'ownerLostBeforeStart' : 'ownerLost',
    run.retryBudgetStart,
    run.automaticRetry,
  );
  if (decision.retry) {
    return {
      type: 'requeue',
      cause: proof,
      nextAttempt: decision.nextAttempt,
      backoffSeconds: decision.backoffSeconds,
      message: `owner lost: ${text}`,
    };
  }
  if (decision.why === 'notRetrySafe') {
    return { type: 'interrupt', cause: proof, reason: RUN_REASONS.ownerLost, message: `owner lost and the task is not retrySafe: ${text}` };
  }
  if (decision.why === 'policyForbids') {
    return {
      type: 'interrupt',
      cause: proof,
      reason: RUN_REASONS.ownerLost,
      message: `owner lost and not retried automatically: ${decision.policy.message}; retry it with krt retry: ${text}`,
    };
  }
  return { type: 'fail', cause: proof, message: `owner lost and no attempts left: ${text}` };
}

const SUSPICION_TEXT: Record<Suspicion, string> = {
  podDeleting: 'the owner Pod is deleting but still routed',
  leaseExpired: "the owner Pod's Lease expired",
  ownerStoppedReporting: 'the owner renews its Lease but no longer holds the Run',
};
