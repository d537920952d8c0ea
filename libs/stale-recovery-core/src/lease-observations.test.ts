import type { V1Lease } from '@kubernetes/client-node';
import type { InformerEventHandler } from '@kruntimes/controller-runtime';
import { LeaseObservations, observeLeases } from './lease-observations.ts';

const lease = (
  name: string,
  resourceVersion: string | undefined,
  renewTime = '2026-01-01T00:00:00.000000Z',
  namespace = 'ns',
): V1Lease => ({
  metadata: { name, namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
  spec: { holderIdentity: 'pod-uid', leaseDurationSeconds: 10, renewTime: renewTime as unknown as Date },
});

function clocked(maxLeases = 1_000): { observations: LeaseObservations; advance: (ms: number) => void } {
  let now = 0;
  return {
    observations: new LeaseObservations({ now: () => now, maxLeases }),
    advance: (ms) => {
      now += ms;
    },
  };
}

describe('LeaseObservations', () => {
  it('keeps the time a version was first seen until the Lease changes', () => {
    const { observations, advance } = clocked();
    advance(100);
    expect(observations.observe(lease('a', '1')).atMs).toBe(100);
    advance(5_000);
    // The same version again (a relist, or the cache at decision time): still first seen at 100.
    expect(observations.observe(lease('a', '1')).atMs).toBe(100);
    advance(1_000);
    expect(observations.observe(lease('a', '2')).atMs).toBe(6_100);
  });

  it('a changed version is a change whatever its renewTime says (a Pod clock ahead, behind or stuck)', () => {
    const { observations, advance } = clocked();
    observations.observe(lease('a', '1', '2030-01-01T00:00:00.000000Z'));
    advance(1_000);
    expect(observations.observe(lease('a', '2', '2020-01-01T00:00:00.000000Z')).atMs).toBe(1_000);
    advance(1_000);
    expect(observations.observe(lease('a', '3', '2020-01-01T00:00:00.000000Z')).atMs).toBe(2_000);
  });

  it('without a resourceVersion, the holder record identifies the version', () => {
    const { observations, advance } = clocked();
    observations.observe(lease('a', undefined, 't1'));
    advance(1_000);
    expect(observations.observe(lease('a', undefined, 't1')).atMs).toBe(0);
    expect(observations.observe(lease('a', undefined, 't2')).atMs).toBe(1_000);
  });

  it('Leases are told apart by namespace and name', () => {
    const { observations, advance } = clocked();
    observations.observe(lease('a', '1'));
    advance(1_000);
    expect(observations.observe(lease('b', '1')).atMs).toBe(1_000);
    expect(observations.observe(lease('a', '1', undefined, 'other')).atMs).toBe(1_000);
    expect(observations.observe(lease('a', '1')).atMs).toBe(0);
  });

  it('is fed by the informer and forgets deleted Leases: a Lease seen again later is seen anew', () => {
    const { observations, advance } = clocked();
    const handlers: InformerEventHandler<V1Lease>[] = [];
    observeLeases({ addEventHandler: (handler) => handlers.push(handler) }, observations);
    const [handler] = handlers;
    handler?.add?.(lease('a', '1'));
    advance(1_000);
    handler?.update?.(lease('a', '2'));
    expect(observations.size).toBe(1);
    advance(1_000);
    expect(observations.observe(lease('a', '2')).atMs).toBe(1_000);
    handler?.delete?.(lease('a', '2'));
    expect(observations.size).toBe(0);
    advance(1_000);
    expect(observations.observe(lease('a', '2')).atMs).toBe(3_000);
  });

  it('is bounded: beyond the limit the longest-unchanged Lease is dropped (and counts as seen anew)', () => {
    const { observations, advance } = clocked(2);
    observations.observe(lease('a', '1'));
    advance(1);
    observations.observe(lease('b', '1'));
    advance(1);
    observations.observe(lease('a', '2'));
    advance(1);
    observations.observe(lease('c', '1'));
    expect(observations.size).toBe(2);
    // b stood still longest: dropped; a (changed at 2) and c (3) kept.
    expect(observations.observe(lease('a', '2')).atMs).toBe(2);
    expect(observations.observe(lease('c', '1')).atMs).toBe(3);
    advance(1);
    expect(observations.observe(lease('b', '1')).atMs).toBe(4);
  });
});
