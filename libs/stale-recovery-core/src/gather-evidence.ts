import type { V1Lease, V1Pod, V1Service } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { serviceEndpoints } from '@kruntimes/controller-runtime';
import type { CacheReader, ReadonlyDeep } from '@kruntimes/controller-runtime';
import type { OwnershipEpoch } from '@kruntimes/fencing';
import { classify } from '@kruntimes/run-state';
import type { RecoveryEvidence, RunFacts } from './decide.ts';
import { leaseState, ownerEvidence } from './evidence.ts';
import type { LeaseFacts, PodFacts } from './evidence.ts';
import type { LeaseObservations } from './lease-observations.ts';
import { includesRef, readLeaseReport } from './lease-report.ts';
import type { ReportingTracker } from './reporting-tracker.ts';
import { epochKey, lastChangeMs } from './run-facts.ts';

export interface EvidenceInput {
  namespace: string;
  run: ReadonlyDeep<Run>;
  facts: RunFacts;
  /** Monotonic milliseconds (MonotonicClock.now, as the LeaseObservations' clock). */
  nowMs: number;
  /**
   * Wall-clock milliseconds, compared with a deleting Pod's deletionTimestamp (the API
   * server's clock: a skew moves the end of a drain by as much, bounded by the Lease).
   */
  wallNowMs: number;
}

/** The reads of the caches the evidence comes from (RecoveryCaches' informers, or a test's FakeCaches). */
export interface EvidenceCaches {
  /** Runtime Pods. */
  pods: CacheReader<V1Pod>;
  /** Runtime Services. */
  services: CacheReader<V1Service>;
  /** runtimed's Pod Leases. */
  leases: CacheReader<V1Lease>;
}

/** Where the evidence comes from: the caches, and when this process saw each Lease change. */
export interface EvidenceSources {
  caches: EvidenceCaches;
  observations: LeaseObservations;
}

/** What decideFence weighs, from the caches. Feeds the tracker the Lease's report as a side effect. */
export function gatherEvidence(
  sources: EvidenceSources,
  tracker: ReportingTracker,
  { namespace, run, facts, nowMs, wallNowMs }: EvidenceInput,
): RecoveryEvidence {
  const { caches } = sources;
  const epoch = facts.epoch;
  if (epoch === undefined) {
    return { podExists: false, podDeleting: false, podInServiceEndpoints: false, ownerConfirmedRelease: undefined, leaseExpired: false };
  }
  const uid = run.metadata.uid ?? '';
  const pods = caches.pods.list(namespace);
  // The exact UID: a new Pod under the old name is another Pod, and the old one is gone.
  const pod = pods.find((p) => p.metadata?.uid === epoch.podUID);
  let podFacts: PodFacts | undefined;
  if (pod !== undefined) {
    const service = caches.services.get(run.spec.runtime, namespace);
    const deletion = pod.metadata?.deletionTimestamp;
    podFacts = {
      deleting: deletion !== undefined,
      withinGracePeriod: deletion !== undefined && new Date(deletion).getTime() > wallNowMs,
      inServiceEndpoints: service !== undefined && serviceEndpoints(service, pods).some((endpoint) => endpoint.podUID === epoch.podUID),
    };
  }
  const lease = ownerLease(sources, namespace, epoch);
  let stoppedReporting = false;
  const classOfPhase = classify(facts.phase);
  if (
    lease?.report.held !== undefined &&
    leaseState(lease, epoch.podUID, nowMs) === 'fresh' &&
    (classOfPhase === 'executing' || classOfPhase === 'serving')
  ) {
    // When this process saw the renewal and the Run's change: the Pod's renewTime and the Run's times are other clocks.
    const key = epochKey(uid, epoch);
    stoppedReporting = tracker.observe(
      key,
      lease.observedAtMs,
      includesRef(lease.report.held, uid, epoch.attempt),
      tracker.runChangeSeenAt(key, lastChangeMs(run), nowMs),
    );
  }
  return ownerEvidence({ runUID: uid, epoch, pod: podFacts, lease, nowMs, ownerStoppedReporting: stoppedReporting });
}

/**
 * The Lease of the epoch's owner Pod, from the cache, with when this process first saw its
 * current version (observed now if the informer's event has not been seen yet).
 */
export function ownerLease(
  { caches, observations }: { caches: Pick<EvidenceCaches, 'leases'>; observations: LeaseObservations },
  namespace: string,
  epoch: OwnershipEpoch,
): LeaseFacts | undefined {
  const lease = caches.leases.get(epoch.pod, namespace);
  return lease === undefined ? undefined : leaseFacts(lease, observations.observe(lease).atMs);
}

/** A Lease from the cache. Its renewTime is not read: it is on the Pod's clock. */
function leaseFacts(lease: ReadonlyDeep<V1Lease>, observedAtMs: number): LeaseFacts {
  return {
    holderIdentity: lease.spec?.holderIdentity,
    leaseDurationSeconds: lease.spec?.leaseDurationSeconds,
    observedAtMs,
    report: readLeaseReport(lease.metadata?.annotations),
  };
}
