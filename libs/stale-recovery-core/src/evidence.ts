import type { OwnershipEpoch } from '@kruntimes/fencing';
import type { RecoveryEvidence } from './decide.ts';
import { includesRef } from './lease-report.ts';
import type { LeaseReport } from './lease-report.ts';

/** The owner Pod as the Pod cache shows it: looked up by the epoch's exact UID. */
export interface PodFacts {
  deleting: boolean;
  /** Among the ready endpoints of its Runtime's Service (a deleting Pod never is). */
  inServiceEndpoints: boolean;
  /**
   * Deleting, and its deletionTimestamp (deletion request + grace period, set by the API
   * server) is still ahead: the kubelet has not yet killed what is left.
   */
  withinGracePeriod?: boolean;
}

/**
 * The owner's Pod Lease as the Lease cache shows it, and when this process saw it change.
 * No renewTime: it is on the Pod's clock, and nothing here compares it with this one.
 */
export interface LeaseFacts {
  holderIdentity: string | undefined;
  leaseDurationSeconds: number | undefined;
  /** Monotonic milliseconds (MonotonicClock.now) at which this process first saw the Lease's current version. */
  observedAtMs: number;
  report: LeaseReport;
}

export type LeaseState =
  /** No Lease of this Pod UID (none yet, or another Pod's): says nothing. */
  'unknown' | 'fresh' | 'expired';

/**
 * A Lease is this Pod's when its holder is the Pod UID. It expired when it has not changed
 * for leaseDurationSeconds since this process first saw its current version, both times on
 * this process's monotonic clock (client-go's leader election, and decideLeaseRound): the
 * renewTime the Pod wrote is never compared with this clock, so a Pod clock ahead or behind
 * neither keeps a dead owner fresh nor expires a live one. A process that just started has
 * seen every Lease change just now: it calls none expired before a full lease duration.
 * `nowMs` is monotonic (MonotonicClock.now), like `observedAtMs`.
 */
export function leaseState(lease: LeaseFacts | undefined, podUID: string, nowMs: number): LeaseState {
  if (lease?.holderIdentity !== podUID) return 'unknown';
  if (lease.leaseDurationSeconds === undefined) return 'expired';
  return nowMs - lease.observedAtMs > lease.leaseDurationSeconds * 1000 ? 'expired' : 'fresh';
}

/** When a fresh Lease expires unless it changes first (monotonic, like `observedAtMs`). */
export function leaseExpiresAtMs(lease: LeaseFacts): number {
  return lease.observedAtMs + (lease.leaseDurationSeconds ?? 0) * 1000;
}

export interface EvidenceInput {
  runUID: string;
  epoch: OwnershipEpoch;
  /** The Pod with exactly the epoch's UID, undefined when there is none. */
  pod: PodFacts | undefined;
  lease: LeaseFacts | undefined;
  /** Monotonic milliseconds (MonotonicClock.now): the Lease's expiry is judged by it. */
  nowMs: number;
  /** From the ReportingTracker: the owner's fresh Lease stopped listing the epoch for longer than the grace. */
  ownerStoppedReporting: boolean;
}

/**
 * The evidence decideFence weighs. A release counts only when the owner's own Lease
 * (holder = the epoch's Pod UID) lists exactly this epoch as released and no longer as
 * held, and the owner had its chance to write the outcome itself: its Lease expired, or it
 * kept renewing past the reporting grace without writing. (runtimed releases first and
 * writes the outcome right after; a release seen in between must not turn a task that
 * exited non-zero into Interrupted.)
 */
export function ownerEvidence({ runUID, epoch, pod, lease, nowMs, ownerStoppedReporting }: EvidenceInput): RecoveryEvidence {
  const state = leaseState(lease, epoch.podUID, nowMs);
  const ownLease = state === 'unknown' ? undefined : lease;
  const settled = state === 'expired' || ownerStoppedReporting;
  const released =
    settled &&
    ownLease !== undefined &&
    includesRef(ownLease.report.released, runUID, epoch.attempt) &&
    !includesRef(ownLease.report.held, runUID, epoch.attempt);
  return {
    podExists: pod !== undefined,
    podDeleting: pod?.deleting === true,
    podInServiceEndpoints: pod?.inServiceEndpoints === true,
    ownerConfirmedRelease: released ? epoch : undefined,
    leaseExpired: pod !== undefined && state === 'expired',
    ownerStoppedReporting: pod !== undefined && state === 'fresh' && ownerStoppedReporting,
    // A draining owner renews its Lease to the end; a silent or expired one is judged as today.
    ownerDraining: pod?.deleting === true && pod.withinGracePeriod === true && state === 'fresh' && !ownerStoppedReporting && !released,
  };
}
