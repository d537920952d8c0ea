import { isKruntimesError } from '@kruntimes/errors';
import { checkOwnership, decideFence, epochOf, sameEpoch, verifyPeerExpectation } from './index.ts';
import type { OwnerEvidence } from './index.ts';

const epoch = { attempt: 2, pod: 'python-abc', podUID: 'uid-1' };

describe('epochOf and sameEpoch', () => {
  it.each([
    [undefined, undefined],
    [{ attempt: 2 }, undefined],
    [{ attempt: 2, assignedPod: 'python-abc', assignedPodUID: '' }, undefined],
    [{ assignedPod: 'python-abc', assignedPodUID: 'uid-1' }, undefined],
    [{ attempt: 2, assignedPod: 'python-abc', assignedPodUID: 'uid-1' }, epoch],
  ])('epochOf(%j) is %j', (status, expected) => {
    expect(epochOf(status)).toEqual(expected);
  });

  it.each([
    [epoch, true],
    [{ ...epoch, attempt: 3 }, false],
    [{ ...epoch, podUID: 'uid-2' }, false],
    [{ ...epoch, pod: 'other' }, false],
    [undefined, false],
  ])('sameEpoch(epoch, %j) is %s', (other, same) => {
    expect(sameEpoch(epoch, other)).toBe(same);
  });
});

describe('checkOwnership', () => {
  const status = { attempt: 2, assignedPod: 'python-abc', assignedPodUID: 'uid-1' };
  it.each([
    [status, 'uid-1', 2, { owner: true }],
    [status, 'uid-9', 2, { owner: false, reason: 'otherPod' }],
    [status, 'uid-1', 1, { owner: false, reason: 'otherAttempt' }],
    [{ attempt: 3 }, 'uid-1', 3, { owner: false, reason: 'unassigned' }],
    [undefined, 'uid-1', 1, { owner: false, reason: 'unassigned' }],
  ])('%j for pod %s attempt %d', (current, podUID, attempt, expected) => {
    expect(checkOwnership(current, podUID, attempt)).toEqual(expected);
  });
});

describe('verifyPeerExpectation', () => {
  const served = { runUID: 'run-1', attempt: 2, podUID: 'uid-1' };
  it('accepts the exact epoch', () => {
    expect(() => {
      verifyPeerExpectation(served, served);
    }).not.toThrow();
  });
  it.each([
    [{ ...served, runUID: 'run-2' }, 'runUID'],
    [{ ...served, attempt: 1 }, 'attempt'],
    [{ ...served, podUID: 'uid-2' }, 'podUID'],
  ])('refuses %j with EpochMismatch naming %s', (expected, field) => {
    let thrown: unknown;
    try {
      verifyPeerExpectation(expected, served);
    } catch (error) {
      thrown = error;
    }
    expect(isKruntimesError(thrown, 'EpochMismatch')).toBe(true);
    expect((thrown as Error).message).toContain(field);
  });
});

describe('decideFence', () => {
  const alive: OwnerEvidence = {
    podExists: true,
    podDeleting: false,
    podInServiceEndpoints: true,
    ownerConfirmedRelease: undefined,
    leaseExpired: false,
  };
  it.each([
    ['the Pod UID is gone', { ...alive, podExists: false }, { fenced: true, proof: 'podGone' }],
    ['the owner confirmed this epoch', { ...alive, ownerConfirmedRelease: epoch }, { fenced: true, proof: 'ownerConfirmedRelease' }],
    [
      'the Pod is deleting and unrouted',
      { ...alive, podDeleting: true, podInServiceEndpoints: false },
      { fenced: true, proof: 'podDeletingAndUnrouted' },
    ],
    ['the Pod is deleting but still routed', { ...alive, podDeleting: true }, { fenced: false, suspect: true }],
    ['only the Lease expired (a frozen Pod may come back)', { ...alive, leaseExpired: true }, { fenced: false, suspect: true }],
    [
      'a Lease expired and the Pod is unrouted but not deleting',
      { ...alive, leaseExpired: true, podInServiceEndpoints: false },
      { fenced: false, suspect: true },
    ],
    [
      'the owner confirmed an older attempt',
      { ...alive, ownerConfirmedRelease: { ...epoch, attempt: 1 } },
      { fenced: false, suspect: false },
    ],
    [
      'the owner confirmed for another Pod UID',
      { ...alive, ownerConfirmedRelease: { ...epoch, podUID: 'uid-0' } },
      { fenced: false, suspect: false },
    ],
    ['the owner renews its Lease but stopped listing the Run', { ...alive, ownerStoppedReporting: true }, { fenced: false, suspect: true }],
    [
      'the owner stopped listing the Run and confirmed its release',
      { ...alive, ownerStoppedReporting: true, ownerConfirmedRelease: epoch },
      { fenced: true, proof: 'ownerConfirmedRelease' },
    ],
    ['nothing is wrong', alive, { fenced: false, suspect: false }],
  ] as const)('%s', (_name, evidence, expected) => {
    expect(decideFence(epoch, evidence)).toMatchObject(expected);
  });
});
