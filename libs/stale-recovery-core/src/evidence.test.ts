import type { OwnershipEpoch } from '@kruntimes/fencing';
import { leaseExpiresAtMs, leaseState, ownerEvidence } from './evidence.ts';
import type { LeaseFacts } from './evidence.ts';

const epoch: OwnershipEpoch = { attempt: 2, pod: 'p', podUID: 'pod-uid' };
/** Monotonic: when this process looks. */
const NOW = 1_000_000;
/** The Pod's wall clock: a different machine's clock, on another scale entirely. */
const POD_WALL = 1_764_000_000_000;
const MINUTES_5 = 5 * 60_000;
const lease = (over: Partial<LeaseFacts> = {}): LeaseFacts => ({
  holderIdentity: 'pod-uid',
  renewTimeMs: POD_WALL,
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
    ['no duration', seen(0, { leaseDurationSeconds: undefined }), 'expired'],
    ['changed a moment ago after a long pause (a new version, seen anew)', seen(1), 'fresh'],
    ['renewTime 5 min in the future, unchanged for less than its duration', seen(5_000, { renewTimeMs: POD_WALL + MINUTES_5 }), 'fresh'],
    ['renewTime 5 min in the future, unchanged for more than its duration', seen(10_001, { renewTimeMs: POD_WALL + MINUTES_5 }), 'expired'],
    ['renewTime 5 min in the past, unchanged for less than its duration', seen(5_000, { renewTimeMs: POD_WALL - MINUTES_5 }), 'fresh'],
    ['renewTime 5 min in the past, unchanged for more than its duration', seen(10_001, { renewTimeMs: POD_WALL - MINUTES_5 }), 'expired'],
    [
      'renewTime a year in the future, unchanged for more than its duration',
      seen(10_001, { renewTimeMs: POD_WALL + 31_536_000_000 }),
      'expired',
    ],
    ['renewTime at the epoch, unchanged for less than its duration', seen(5_000, { renewTimeMs: 0 }), 'fresh'],
    ['never renewed (no renewTime), unchanged for less than its duration', seen(5_000, { renewTimeMs: undefined }), 'fresh'],
    ['never renewed (no renewTime), unchanged for more than its duration', seen(10_001, { renewTimeMs: undefined }), 'expired'],
  ] as const)('%s', (_name, facts, expected) => {
    expect(leaseState(facts, 'pod-uid', NOW)).toBe(expected);
  });

  it('renewTime never matters: the same observations decide the same whatever the Pod wrote', () => {
    for (const renewTimeMs of [undefined, 0, NOW, NOW + MINUTES_5, NOW - MINUTES_5, POD_WALL + MINUTES_5, POD_WALL - MINUTES_5]) {
      for (const ago of [0, 5_000, 10_000, 10_001, 60_000]) {
        expect(leaseState(seen(ago, { renewTimeMs }), 'pod-uid', NOW)).toBe(ago > 10_000 ? 'expired' : 'fresh');
      }
    }
  });

  it('expires a full duration after the current version was first seen', () => {
    expect(leaseExpiresAtMs(seen(3_000))).toBe(NOW + 7_000);
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
});
