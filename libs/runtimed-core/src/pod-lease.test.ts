import { LEASE_ANNOTATIONS } from '@kruntimes/api';
import { MAX_RELEASED_RUNS, ReleasedRuns, leaseRunAnnotations } from './pod-lease.ts';

describe('Pod Lease run report', () => {
  it('encodes held and released epochs as JSON arrays of {uid, attempt}', () => {
    const annotations = leaseRunAnnotations({
      held: [
        { uid: 'a', attempt: 1 },
        { uid: 'b', attempt: 3 },
      ],
      released: [{ uid: 'c', attempt: 2 }],
    });
    expect(Object.keys(annotations).sort()).toEqual([LEASE_ANNOTATIONS.heldRuns, LEASE_ANNOTATIONS.releasedRuns].sort());
    expect(JSON.parse(annotations[LEASE_ANNOTATIONS.heldRuns] ?? '')).toEqual([
      { uid: 'a', attempt: 1 },
      { uid: 'b', attempt: 3 },
    ]);
    expect(annotations[LEASE_ANNOTATIONS.releasedRuns]).toBe('[{"uid":"c","attempt":2}]');
  });

  it('writes empty arrays when nothing is held or released (an owner that holds nothing says so)', () => {
    expect(leaseRunAnnotations({ held: [], released: [] })).toEqual({
      [LEASE_ANNOTATIONS.heldRuns]: '[]',
      [LEASE_ANNOTATIONS.releasedRuns]: '[]',
    });
  });

  it('carries only uid and attempt, whatever else the refs hold', () => {
    const ref = { uid: 'a', attempt: 1, registrationId: 'secret-ish' };
    expect(leaseRunAnnotations({ held: [ref], released: [] })[LEASE_ANNOTATIONS.heldRuns]).toBe('[{"uid":"a","attempt":1}]');
  });

  it('bounds released to the newest 256', () => {
    const released = Array.from({ length: 300 }, (_, i) => ({ uid: `u${String(i)}`, attempt: 1 }));
    const decoded = JSON.parse(leaseRunAnnotations({ held: [], released })[LEASE_ANNOTATIONS.releasedRuns] ?? '') as { uid: string }[];
    expect(decoded).toHaveLength(MAX_RELEASED_RUNS);
    expect(decoded[0]?.uid).toBe('u44');
    expect(decoded.at(-1)?.uid).toBe('u299');
  });
});

describe('ReleasedRuns', () => {
  it('keeps the newest, moves a repeated release to the end, drops the oldest past the bound', () => {
    const log = new ReleasedRuns(3);
    log.add({ uid: 'a', attempt: 1 });
    log.add({ uid: 'b', attempt: 1 });
    log.add({ uid: 'a', attempt: 2 });
    log.add({ uid: 'a', attempt: 1 });
    expect(log.list()).toEqual([
      { uid: 'b', attempt: 1 },
      { uid: 'a', attempt: 2 },
      { uid: 'a', attempt: 1 },
    ]);
    log.add({ uid: 'c', attempt: 1 });
    expect(log.list()).toEqual([
      { uid: 'a', attempt: 2 },
      { uid: 'a', attempt: 1 },
      { uid: 'c', attempt: 1 },
    ]);
  });
});
