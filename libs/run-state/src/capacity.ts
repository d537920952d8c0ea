import { REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { classify, holdsCapacity } from './classification.ts';

/**
 * The parts of a Run that its hold on Pod capacity depends on. Structural and readonly, so
 * that a plain Run and an informer cache object (ReadonlyDeep) both fit.
 */
export interface CapacityHolder {
  readonly metadata: { readonly finalizers?: readonly string[] | undefined };
  readonly status?: { readonly phase?: RunPhase | undefined; readonly assignedPodUID?: string | undefined } | undefined;
}

/** The unit of one Pod's `spec.runs` capacity that a Run holds. */
export interface CapacityHold {
  /** The assigned Pod's UID. */
  podUID: string;
  /**
   * Its owner took the unit: the Run is past Scheduled (claimed), or ended with its
   * registration still to clean up. False for a Scheduled Run: the scheduler gave it
   * the unit, and only that Pod's runtimed claims it.
   */
  claimed: boolean;
}

/**
 * The one count of a Pod's occupancy, for the scheduler (placement) and for runtimed
 * (the claim check): a Run holds a unit of its assigned Pod while its phase holds
 * capacity (Scheduled, Running, Ready), and after it ended for as long as it still carries
 * the registration-cleanup finalizer. Undefined when it holds none (not assigned,
 * WaitingInput, Pending, or ended and cleaned up).
 */
export function capacityHold(run: CapacityHolder): CapacityHold | undefined {
  const podUID = run.status?.assignedPodUID;
  if (podUID === undefined || podUID === '') return undefined;
  const phase = run.status?.phase ?? 'Pending';
  const cleanupPending = run.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true;
  if (!holdsCapacity(phase, cleanupPending)) return undefined;
  return { podUID, claimed: classify(phase) !== 'assigned' };
}
