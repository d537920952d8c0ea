import type { OwnershipEpoch } from '@kruntimes/fencing';
import { leaseState, ownerEvidence } from './evidence.ts';
import type { LeaseFacts } from './evidence.ts';

const epoch: OwnershipEpoch = { attempt: 2, pod: 'p', podUID: 'pod-uid' };
const NOW = 1_000_000;
const lease = (over: Partial<LeaseFacts> = {}): LeaseFacts => ({
  holderIdentity: 'pod-uid',
  renewTimeMs: NOW - 1_000,
  leaseDurationSeconds: 10,
  report: { held: [{ uid: 'run', attempt: 2 }], released: [] },
  ...over,
});

describe('leaseState', () => {
  it.each([
    ['no Lease', undefined, 'unknown'],
    ['held by another Pod UID', lease({ holderIdentity: 'other' }), 'unknown'],
    ['renewed within its duration', lease(), 'fresh'],
    ['exactly at expiry', lease({ renewTimeMs: NOW - 10_000 }), 'fresh'],
    ['past renewTime + duration', lease({ renewTimeMs: NOW - 10_001 }), 'expired'],
    ['never renewed', lease({ renewTimeMs: undefined }), 'expired'],
  ] as const)('%s', (_name, facts, expected) => {
    expect(leaseState(facts, 'pod-uid', NOW)).toBe(expected);
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
    expect(ownerEvidence({ ...base, pod: { deleting: true, inServiceEndpoints: false }, lease: lease({ renewTimeMs: 0 }) })).toMatchObject({
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
    expect(ownerEvidence({ ...settled, lease: { ...releasedLease, renewTimeMs: 0 } }).ownerConfirmedRelease).toEqual(epoch);
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
    expect(ownerEvidence({ ...base, ownerStoppedReporting: true, pod, lease: lease({ renewTimeMs: 0 }) }).ownerStoppedReporting).toBe(
      false,
    );
  });
});
