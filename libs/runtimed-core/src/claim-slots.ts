import { RUN_REASONS } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { capacityHold } from '@kruntimes/run-state';
import type { CapacityHolder, ClaimRefusalReason } from '@kruntimes/run-state';

/** What the claim check reads of a Run (a cached one fits, and so does a live one). */
export interface SlotRun extends CapacityHolder {
  readonly metadata: {
    readonly uid?: string | undefined;
    readonly name?: string | undefined;
    readonly finalizers?: readonly string[] | undefined;
  };
  readonly status?:
    | {
        readonly phase?: RunPhase | undefined;
        readonly assignedPodUID?: string | undefined;
        readonly attempt?: number | undefined;
      }
    | undefined;
}

/** A claim this runtimed decided and may have written, that the cache may not show yet. */
export interface ClaimInFlight {
  uid: string;
  attempt: number;
}

/** Who holds a unit of this Pod, by Run UID (-> name, for the live check). */
export interface PodHolders {
  /** Runs the cache shows holding a claimed unit of the Pod (run-state's capacityHold). */
  claimed: Map<string, string>;
  /** This process's claims the cache does not show yet: they hold their unit too. */
  inFlight: Set<string>;
  /** Claims the cache caught up with (claimed, moved, gone): the caller forgets them. */
  settled: string[];
}

/**
 * Which Runs hold a unit of Pod `podUID`, the way runtimed counts before it claims: the
 * Runs the cache shows holding a *claimed* unit (past Scheduled, or ended with the
 * registration cleanup pending: the scheduler's count, run-state's capacityHold), plus the
 * claims of this process that the cache does not show yet (decided, or written but not
 * seen back), so that two claims decided at once cannot both take the last unit.
 *
 * Other Runs merely Scheduled on this Pod do not count: they are claims waiting for this
 * very runtimed, which takes them one at a time; counting them would refuse both of two
 * Runs bound to the last unit, where one of them fits.
 *
 * A claim in flight counts while the cache still shows that Run Scheduled on this Pod at
 * the claimed attempt (the write may have landed unseen, or may be retried); once the
 * cache shows anything else, the cache is the truth and the claim is settled.
 */
export function podHolders(runs: Iterable<SlotRun>, podUID: string, inFlight: Iterable<ClaimInFlight>): PodHolders {
  const claimed = new Map<string, string>();
  const byUID = new Map<string, SlotRun>();
  for (const run of runs) {
    const uid = run.metadata.uid ?? '';
    byUID.set(uid, run);
    const hold = capacityHold(run);
    if (hold?.podUID === podUID && hold.claimed) claimed.set(uid, run.metadata.name ?? '');
  }
  const pending = new Set<string>();
  const settled: string[] = [];
  for (const claim of inFlight) {
    const run = byUID.get(claim.uid);
    const hold = run === undefined ? undefined : capacityHold(run);
    const stillScheduledHere = hold?.podUID === podUID && !hold.claimed && run?.status?.attempt === claim.attempt;
    if (stillScheduledHere) pending.add(claim.uid);
    else settled.push(claim.uid);
  }
  return { claimed, inFlight: pending, settled };
}

export interface ClaimInput {
  /** The Run to claim (Scheduled on this Pod). */
  uid: string;
  podName: string;
  /** The Pod's Run capacity (`KRT_RUNS_PER_POD`); undefined: the Pod declares none, nothing is checked. */
  capacity: number | undefined;
  holders: Pick<PodHolders, 'claimed' | 'inFlight'>;
}

export type ClaimDecision = { claim: true } | { claim: false; reason: ClaimRefusalReason; message: string; held: number; capacity: number };

/**
 * Claim when the Runs holding a unit of this Pod, this one left out, are fewer than its
 * capacity; otherwise refuse: the Run was bound beyond the Pod's `spec.runs` (by a
 * scheduler leader that lost its lease, or anything else that wrote the assignment).
 */
export function decideClaim({ uid, podName, capacity, holders }: ClaimInput): ClaimDecision {
  if (capacity === undefined) return { claim: true };
  const others = new Set([...holders.claimed.keys(), ...holders.inFlight]);
  others.delete(uid);
  if (others.size < capacity) return { claim: true };
  return {
    claim: false,
    reason: RUN_REASONS.podAtCapacity,
    message: `Pod ${podName} already holds ${String(others.size)} of its ${String(capacity)} Runs (spec.runs); claiming this one would exceed it, so it was given back to be scheduled again`,
    held: others.size,
    capacity,
  };
}

/**
 * The claims of one runtimed in flight, and the check in front of each claim. `decide`
 * is synchronous from counting to reserving the unit, so two reconciles of different
 * Runs (the work queue runs them at once, never one key twice) cannot both take the last
 * unit.
 */
export class ClaimSlots {
  readonly #podUID: string;
  readonly #podName: string;
  readonly #capacity: number | undefined;
  readonly #inFlight = new Map<string, ClaimInFlight>();

  constructor(podUID: string, podName: string, capacity: number | undefined) {
    this.#podUID = podUID;
    this.#podName = podName;
    this.#capacity = capacity;
  }

  get capacity(): number | undefined {
    return this.#capacity;
  }

  /**
   * Counts the holders in `runs` (the namespace's Runs, cached or as read live) and the
   * claims in flight; on `claim`, reserves the Run's unit before returning.
   */
  decide(run: SlotRun, runs: Iterable<SlotRun>): ClaimDecision & { holders: Map<string, string> } {
    const holders = podHolders(runs, this.#podUID, this.#inFlight.values());
    for (const uid of holders.settled) this.#inFlight.delete(uid);
    const uid = run.metadata.uid ?? '';
    const decision = decideClaim({ uid, podName: this.#podName, capacity: this.#capacity, holders });
    if (decision.claim) this.#inFlight.set(uid, { uid, attempt: run.status?.attempt ?? 0 });
    return { ...decision, holders: holders.claimed };
  }

  /** The Run is given back (refused): it holds nothing here any more. */
  release(uid: string): void {
    this.#inFlight.delete(uid);
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }
}
