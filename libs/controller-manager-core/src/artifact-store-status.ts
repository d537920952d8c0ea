import { ARTIFACT_STORE_CONDITION_TYPES, ARTIFACT_STORE_REASONS } from '@kruntimes/api';
import type { ArtifactStoreReason, ArtifactStoreStatus } from '@kruntimes/api';
import { setCondition } from '@kruntimes/run-state';

/** How one retention pass over an ArtifactStore ended. */
export type ArtifactStorePassOutcome =
  { kind: 'cleaned'; removed: number } | { kind: 'unavailable'; reason: Exclude<ArtifactStoreReason, 'StoreReachable'>; message: string };

/**
 * The status after a pass: Ready True (StoreReachable) and a new lastCleanupTime after a
 * finished pass; Ready False with the reason otherwise, keeping the last cleanup time.
 * lastTransitionTime moves only when Ready flips (setCondition).
 */
export function artifactStoreStatus(
  previous: ArtifactStoreStatus | undefined,
  outcome: ArtifactStorePassOutcome,
  generation: number | undefined,
  now: string,
): ArtifactStoreStatus {
  const update =
    outcome.kind === 'cleaned'
      ? {
          type: ARTIFACT_STORE_CONDITION_TYPES.ready,
          status: 'True' as const,
          reason: ARTIFACT_STORE_REASONS.storeReachable,
          message: `the credentials work and the bucket answered; the last pass removed ${String(outcome.removed)} objects`,
        }
      : { type: ARTIFACT_STORE_CONDITION_TYPES.ready, status: 'False' as const, reason: outcome.reason, message: outcome.message };
  const conditions = setCondition(previous?.conditions, update, now, generation);
  const lastCleanupTime = outcome.kind === 'cleaned' ? now : previous?.lastCleanupTime;
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions,
    ...(lastCleanupTime === undefined ? {} : { lastCleanupTime }),
  };
}
