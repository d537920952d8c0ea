import type { V1LeaseSpec, V1MicroTime } from '@kubernetes/client-node';

/**
 * A Lease's holder record as this candidate last saw it change, timed by its own
 * monotonic clock: expiry is judged by how long the record stood still here, so the
 * clocks of different machines are never compared (client-go's observedTime).
 */
export interface LeaseObservation {
  /** holderIdentity, renewTime and leaseTransitions; any change means the holder is alive. */
  readonly record: string;
  readonly atMs: number;
}

export interface LeaseRoundInput {
  readonly identity: string;
  /** What this candidate writes; a held Lease expires by its own leaseDurationSeconds. */
  readonly leaseDurationSeconds: number;
  /** The Lease's spec as just read; undefined when there is no Lease. */
  readonly current: Readonly<V1LeaseSpec> | undefined;
  readonly observed: LeaseObservation | undefined;
  /** Monotonic milliseconds (MonotonicClock.now). */
  readonly nowMs: number;
  /** Written as acquireTime and renewTime; informational for other candidates. */
  readonly writeTime: V1MicroTime;
}

export type LeaseRoundAction =
  /** No Lease yet: create it, holding it. */
  | { readonly type: 'create'; readonly spec: V1LeaseSpec }
  /** This candidate holds it: write a new renewTime. */
  | { readonly type: 'renew'; readonly spec: V1LeaseSpec }
  /** Released, or its holder stopped renewing for a full lease duration: take it over. */
  | { readonly type: 'acquire'; readonly from: 'free' | 'expired'; readonly spec: V1LeaseSpec }
  /** Another candidate holds it and renews it: do not write. */
  | { readonly type: 'wait'; readonly holder: string };

export interface LeaseRound {
  readonly action: LeaseRoundAction;
  /** What the next round compares with. */
  readonly observed: LeaseObservation | undefined;
}

/**
 * One leader-election round, decided from the Lease as read (client-go's
 * tryAcquireOrRenew without the I/O). Every write is fenced by the read resourceVersion,
 * so two candidates that both decide to acquire cannot both succeed.
 */
export function decideLeaseRound(input: LeaseRoundInput): LeaseRound {
  const { identity, leaseDurationSeconds, current, nowMs, writeTime } = input;
  if (current === undefined) {
    return {
      action: {
        type: 'create',
        spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: writeTime, renewTime: writeTime, leaseTransitions: 0 },
      },
      observed: undefined,
    };
  }
  const record = JSON.stringify([current.holderIdentity, current.renewTime, current.leaseTransitions]);
  const observed = input.observed?.record === record ? input.observed : { record, atMs: nowMs };
  const holder = current.holderIdentity ?? '';
  const transitions = current.leaseTransitions ?? 0;
  if (holder === identity) {
    return {
      action: {
        type: 'renew',
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds,
          acquireTime: current.acquireTime ?? writeTime,
          renewTime: writeTime,
          leaseTransitions: transitions,
        },
      },
      observed,
    };
  }
  const acquired = {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: writeTime,
    renewTime: writeTime,
    leaseTransitions: transitions + 1,
  };
  if (holder === '') return { action: { type: 'acquire', from: 'free', spec: acquired }, observed };
  const expired = nowMs - observed.atMs > (current.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
  if (expired) return { action: { type: 'acquire', from: 'expired', spec: acquired }, observed };
  return { action: { type: 'wait', holder }, observed };
}
