import type { V1Lease } from '@kubernetes/client-node';
import type { SharedInformer } from '@kruntimes/controller-runtime';
import type { OwnershipEpoch } from '@kruntimes/fencing';
import { leaseExpiresAtMs, leaseState, ownerEvidence } from './evidence.ts';
import type { LeaseFacts } from './evidence.ts';
import { ownerLease } from './gather-evidence.ts';
import { LeaseObservations } from './lease-observations.ts';

const epoch: OwnershipEpoch = { attempt: 2, pod: 'p', podUID: 'pod-uid' };
/** Monotonic: when this process looks. */
const NOW = 1_000_000;
const MINUTES_5 = 5 * 60_000;
const lease = (over: Partial<LeaseFacts> = {}): LeaseFacts => ({
  holderIdentity: 'pod-uid',
  leaseDurationSeconds: 10,
  observedAtMs: NOW - 1_000,
  report: { held: [{ uid: 'run', attempt: 2 }], released: [] },
  ...over,
});
/** A Lease whose current version this process first saw `ago` ms before NOW. */
const seen = (ago: number, over: Partial<LeaseFacts> = {}): LeaseFacts => lease({ observedAtMs: NOW - ago, ...over });

describe('leaseState: expiry by when this process saw the Lease change, on its own clock', () => {
  it.each([
    ['no Lease', undefined, 'unknown'],
    ['held by another Pod UID', seen(60_000, { holderIdentity: 'other' }), 'unknown'],
    ['first seen just now (a newly started process waits a full duration)', seen(0), 'fresh'],
    ['unchanged for less than its duration', seen(9_999), 'fresh'],
    ['unchanged for exactly its duration', seen(10_000), 'fresh'],
    ['unchanged for more than its duration', seen(10_001), 'expired'],
    ['unchanged for much longer', seen(3_600_000), 'expired'],
    ['changed a moment ago after a long pause (the new version is seen anew)', seen(1), 'fresh'],
    ['no duration', seen(0, { leaseDurationSeconds: undefined }), 'expired'],
  ] as const)('%s', (_name, facts, expected) => {
    expect(leaseState(facts, 'pod-uid', NOW)).toBe(expected);
  });

  it('expires a full duration after the current version was first seen', () => {
    expect(leaseExpiresAtMs(seen(3_000))).toBe(NOW + 7_000);
  });
});

describe('ownerLease + leaseState: the renewTime the Pod wrote never matters', () => {
  const WALL = Date.parse('2026-12-03T12:00:00Z');
  const renewTimes = [
    ['5 minutes in the future', new Date(WALL + MINUTES_5).toISOString()],
    ['5 minutes in the past', new Date(WALL - MINUTES_5).toISOString()],
    ['a year in the future', new Date(WALL + 365 * 86_400_000).toISOString()],
    ['at the epoch', new Date(0).toISOString()],
    ['missing', undefined],
  ] as const;
  const v1Lease = (resourceVersion: string, renewTime: string | undefined): V1Lease => ({
    metadata: { name: 'p', namespace: 'ns', resourceVersion },
    spec: {
      holderIdentity: 'pod-uid',
      leaseDurationSeconds: 10,
      ...(renewTime === undefined ? {} : { renewTime: renewTime as unknown as Date }),
    },
  });

  it.each(renewTimes)('renewTime %s: fresh until unchanged for the duration, fresh again once changed', (_name, renewTime) => {
    let now = 50_000;
    let current = v1Lease('1', renewTime);
    const sources = {
      caches: { leases: { get: () => current } as unknown as SharedInformer<V1Lease> },
      observations: new LeaseObservations({ now: () => now }),
    };
    const state = (): string => leaseState(ownerLease(sources, 'ns', epoch), 'pod-uid', now);
    // First observed at decision time: fresh for a full duration.
    expect(state()).toBe('fresh');
    now += 10_000;
    expect(state()).toBe('fresh');
    now += 1;
    expect(state()).toBe('expired');
    // A renewal (a new version) with the same skewed renewTime: fresh again, then expired a duration later.
    current = v1Lease('2', renewTime);
    expect(state()).toBe('fresh');
    now += 9_999;
    expect(state()).toBe('fresh');
    now += 2;
    expect(state()).toBe('expired');
  });
});

describe('ownerEvidence', () => {
  const base = { runUID: 'run', epoch, nowMs: NOW, ownerStoppedReporting: false };
  it('a missing Pod UID is podExists false (a same-name Pod of another UID is not looked up at all)', () => {
    expect(ownerEvidence({ ...base, pod: undefined, lease: lease() })).toMatchObject({
      podExists: false,
      leaseExpired: false,
      ownerStoppedReporting: false,
    });
  });
  it('carries deletion, endpoints and Lease expiry', () => {
    expect(ownerEvidence({ ...base, pod: { deleting: true, inServiceEndpoints: false }, lease: seen(10_001) })).toMatchObject({
      podExists: true,
      podDeleting: true,
      podInServiceEndpoints: false,
      leaseExpired: true,
    });
  });
  it("a release counts only for this exact epoch, in the owner's own Lease, when no longer held, and once the owner had its chance to write", () => {
    const pod = { deleting: false, inServiceEndpoints: true };
    const settled = { ...base, ownerStoppedReporting: true, pod };
    const releasedLease = lease({ report: { held: [], released: [{ uid: 'run', attempt: 2 }] } });
    expect(ownerEvidence({ ...settled, lease: releasedLease }).ownerConfirmedRelease).toEqual(epoch);
    expect(ownerEvidence({ ...settled, lease: { ...releasedLease, observedAtMs: 0 } }).ownerConfirmedRelease).toEqual(epoch);
    // Just released: the owner writes its own outcome next.
    expect(ownerEvidence({ ...base, pod, lease: releasedLease }).ownerConfirmedRelease).toBeUndefined();
    expect(
      ownerEvidence({ ...settled, lease: lease({ report: { held: [], released: [{ uid: 'run', attempt: 1 }] } }) }).ownerConfirmedRelease,
    ).toBeUndefined();
    expect(
      ownerEvidence({
        ...settled,
        lease: lease({ report: { held: [{ uid: 'run', attempt: 2 }], released: [{ uid: 'run', attempt: 2 }] } }),
      }).ownerConfirmedRelease,
    ).toBeUndefined();
    expect(
      ownerEvidence({ ...settled, lease: { ...releasedLease, holderIdentity: 'someone-else' } }).ownerConfirmedRelease,
    ).toBeUndefined();
  });
  it('stopped reporting counts only while the Lease is fresh', () => {
    const pod = { deleting: false, inServiceEndpoints: true };
    expect(ownerEvidence({ ...base, ownerStoppedReporting: true, pod, lease: lease() }).ownerStoppedReporting).toBe(true);
    expect(ownerEvidence({ ...base, ownerStoppedReporting: true, pod, lease: seen(10_001) }).ownerStoppedReporting).toBe(false);
  });
  describe('a deleting Pod whose owner drains (hands its Runs over itself)', () => {
    const draining = { deleting: true, inServiceEndpoints: false, withinGracePeriod: true };
    it.each([
      ['within the grace period, Lease fresh, the Run held', draining, lease(), false, true],
      ['the grace period ended (the kubelet kills what is left)', { ...draining, withinGracePeriod: false }, lease(), false, false],
      ['the Lease expired (runtimed is gone or frozen)', draining, seen(10_001), false, false],
      ['the Lease is another Pod UID', draining, lease({ holderIdentity: 'other' }), false, false],
      ['the owner stopped listing the Run', draining, lease(), true, false],
      [
        'the owner released the Run and did not write (its chance is over)',
        draining,
        lease({ report: { held: [], released: [{ uid: 'run', attempt: 2 }] } }),
        true,
        false,
      ],
      ['not deleting', { deleting: false, inServiceEndpoints: true, withinGracePeriod: true }, lease(), false, false],
    ] as const)('%s: ownerDraining %#', (_name, pod, facts, stoppedReporting, expected) => {
      expect(ownerEvidence({ ...base, pod, lease: facts, ownerStoppedReporting: stoppedReporting }).ownerDraining).toBe(expected);
    });
  });
});
