import { V1MicroTime } from '@kubernetes/client-node';
import { decideLeaseRound } from './lease-round.ts';
import type { LeaseObservation, LeaseRound, LeaseRoundInput } from './lease-round.ts';

const writeTime = new V1MicroTime('2026-01-01T00:00:10.000Z');
const earlier = new V1MicroTime('2026-01-01T00:00:00.000Z');
const heldByB = { holderIdentity: 'b', leaseDurationSeconds: 15, acquireTime: earlier, renewTime: earlier, leaseTransitions: 2 };
const recordOfB = JSON.stringify(['b', earlier, 2]);
const seenAt = (atMs: number): LeaseObservation => ({ record: recordOfB, atMs });
const mine = (holderIdentity: string, overrides: object = {}) => ({
  holderIdentity,
  leaseDurationSeconds: 10,
  acquireTime: writeTime,
  renewTime: writeTime,
  leaseTransitions: 3,
  ...overrides,
});
const base: LeaseRoundInput = {
  identity: 'a',
  leaseDurationSeconds: 10,
  current: undefined,
  observed: undefined,
  nowMs: 100_000,
  writeTime,
};

describe('decideLeaseRound', () => {
  it.each<[string, Partial<LeaseRoundInput>, LeaseRound]>([
    [
      'no Lease: create it, holding it, no transition yet',
      {},
      {
        action: {
          type: 'create',
          spec: { holderIdentity: 'a', leaseDurationSeconds: 10, acquireTime: writeTime, renewTime: writeTime, leaseTransitions: 0 },
        },
        observed: undefined,
      },
    ],
    [
      'mine: renew, keeping acquireTime and transitions',
      { current: { ...heldByB, holderIdentity: 'a' }, observed: seenAt(0) },
      {
        action: { type: 'renew', spec: mine('a', { acquireTime: earlier, leaseTransitions: 2 }) },
        observed: { record: JSON.stringify(['a', earlier, 2]), atMs: 100_000 },
      },
    ],
    [
      'mine without acquireTime or transitions (written by hand): renew from now',
      { current: { holderIdentity: 'a' } },
      {
        action: { type: 'renew', spec: mine('a', { leaseTransitions: 0 }) },
        observed: { record: JSON.stringify(['a', undefined, undefined]), atMs: 100_000 },
      },
    ],
    [
      'released (empty holder): acquire at once, one more transition',
      { current: { ...heldByB, holderIdentity: '' } },
      {
        action: { type: 'acquire', from: 'free', spec: mine('a') },
        observed: { record: JSON.stringify(['', earlier, 2]), atMs: 100_000 },
      },
    ],
    [
      'no holder at all: acquire at once',
      { current: { leaseDurationSeconds: 15 } },
      {
        action: { type: 'acquire', from: 'free', spec: mine('a', { leaseTransitions: 1 }) },
        observed: { record: JSON.stringify([undefined, undefined, undefined]), atMs: 100_000 },
      },
    ],
    [
      "another's, first seen now: wait a full lease duration from now, whatever its renewTime says",
      { current: heldByB },
      { action: { type: 'wait', holder: 'b' }, observed: seenAt(100_000) },
    ],
    [
      "another's, changed since last seen: it is alive, wait and restart the count",
      { current: { ...heldByB, renewTime: writeTime }, observed: seenAt(0) },
      { action: { type: 'wait', holder: 'b' }, observed: { record: JSON.stringify(['b', writeTime, 2]), atMs: 100_000 } },
    ],
    [
      "another's, unchanged for exactly its lease duration: still fresh",
      { current: heldByB, observed: seenAt(85_000) },
      { action: { type: 'wait', holder: 'b' }, observed: seenAt(85_000) },
    ],
    [
      "another's, unchanged for longer than its lease duration: expired, acquire",
      { current: heldByB, observed: seenAt(84_999) },
      { action: { type: 'acquire', from: 'expired', spec: mine('a') }, observed: seenAt(84_999) },
    ],
    [
      "another's without a lease duration: judged by this candidate's own",
      {
        current: { holderIdentity: 'b', acquireTime: earlier, renewTime: earlier, leaseTransitions: 2 },
        observed: { record: recordOfB, atMs: 89_999 },
      },
      { action: { type: 'acquire', from: 'expired', spec: mine('a') }, observed: { record: recordOfB, atMs: 89_999 } },
    ],
  ])('%s', (_name, input, expected) => {
    expect(decideLeaseRound({ ...base, ...input })).toEqual(expected);
  });
});
