import type { Run } from '@kruntimes/api';
import { retryOf } from './retry.ts';

function finished(overrides: Partial<Run['spec']> = {}, name = 'job'): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, uid: 'uid-1', namespace: 'ns', resourceVersion: '7', labels: { a: 'b' } },
    spec: {
      runtime: 'sh',
      source: { inline: 'echo' },
      mode: { task: { args: ['x'] } },
      env: [{ name: 'K', value: 'V' }],
      timeout: '1m',
      retryPolicy: { maxAttempts: 2 },
      ...overrides,
    },
    status: { phase: 'Failed', attempt: 2 },
  };
}

describe('retryOf', () => {
  it('is a new Run with the same spec, parentRunRef to the original, and a generated name', () => {
    const original = finished();
    expect(retryOf(original)).toEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { generateName: 'job-retry-' },
      spec: { ...original.spec, parentRunRef: { name: 'job', uid: 'uid-1' } },
    });
  });

  it('does not copy cancelRequested, and points at the Run retried, not its parent', () => {
    const retried = retryOf(finished({ cancelRequested: true, parentRunRef: { name: 'first', uid: 'uid-0' } }, 'job-retry-x7k2p'));
    expect(retried.spec.cancelRequested).toBeUndefined();
    expect(retried.spec.parentRunRef).toEqual({ name: 'job-retry-x7k2p', uid: 'uid-1' });
    expect(retried.metadata.generateName).toBe('job-retry-');
  });

  const DIGEST = `sha256:${'ab'.repeat(32)}`;
  const fromConfigMap = { source: { configMapKeyRef: { name: 'src', key: 'main.sh' } } };
  const snapshotted = (overrides: Partial<Run['spec']> = {}): Run => ({
    ...finished(overrides),
    status: { phase: 'Failed', attempt: 1, source: { digest: DIGEST, size: 4, configMapName: 'krt-src-abababababababababab' } },
  });

  it("pins the parent's source snapshot: same digest, the user's reference kept", () => {
    expect(retryOf(snapshotted(fromConfigMap)).spec.source).toEqual({ configMapKeyRef: { name: 'src', key: 'main.sh' }, digest: DIGEST });
    expect(retryOf(snapshotted()).spec.source).toEqual({ inline: 'echo', digest: DIGEST });
  });

  it('with refreshSource reads spec.source again: no pin, not even one the parent carried', () => {
    const parent = snapshotted({ source: { configMapKeyRef: { name: 'src', key: 'main.sh' }, digest: DIGEST } });
    expect(retryOf(parent, { refreshSource: true }).spec.source).toEqual({ configMapKeyRef: { name: 'src', key: 'main.sh' } });
  });

  it('a parent of before snapshots has nothing to pin', () => {
    expect(retryOf(finished(fromConfigMap)).spec.source).toEqual(fromConfigMap.source);
  });

  it('does not share objects with the original', () => {
    const original = finished();
    const retried = retryOf(original);
    retried.spec.env?.push({ name: 'X', value: 'Y' });
    expect(original.spec.env).toHaveLength(1);
  });
});
