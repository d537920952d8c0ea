import type { Run } from '@kruntimes/api';
import { kept, projectedRun, runIdentity, transitionSpec } from './run-projection.ts';

const FULL: Run = {
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'Run',
  metadata: {
    name: 'r',
    namespace: 'ns',
    uid: 'u1',
    resourceVersion: '42',
    generation: 1,
    creationTimestamp: '2026-01-01T00:00:00Z',
    deletionTimestamp: '2026-01-01T00:01:00Z',
    finalizers: ['kruntimes.io/registration-cleanup'],
    labels: { team: 'a' },
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"spec":{}}' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x' }],
  },
  spec: {
    runtime: 'python',
    source: { inline: 'print(1)\n'.repeat(100), digest: `sha256:${'0'.repeat(64)}` },
    mode: { task: { args: ['--a', '--b'] } },
    env: [{ name: 'A', value: 'b' }],
    timeout: '5m',
    retryPolicy: { maxAttempts: 2, retrySafe: true },
    cancelRequested: true,
    ttlSecondsAfterFinished: 60,
    parentRunRef: { name: 'p', uid: 'pu' },
    artifacts: { store: 'st', outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }] },
    creator: { username: 'alice' },
  },
  status: { phase: 'Pending', attempt: 1 },
};

describe('kept', () => {
  it.each([
    ['keeps the named members that are set', { a: 1, b: 2, c: 3 }, ['a', 'c'], { a: 1, c: 3 }],
    ['leaves absent members absent (no undefined)', { a: 1 }, ['a', 'b'], { a: 1 }],
    ['keeps falsy values', { a: 0, b: '', c: false }, ['a', 'b', 'c'], { a: 0, b: '', c: false }],
  ] as const)('%s', (_name, object, keys, expected) => {
    const result = kept(object as Record<string, unknown>, keys as readonly string[]);
    expect(result).toStrictEqual(expected);
  });
});

describe('runIdentity', () => {
  it('keeps identity, versions, timestamps and finalizers; drops labels, annotations and owners', () => {
    expect(runIdentity(FULL.metadata)).toStrictEqual({
      name: 'r',
      namespace: 'ns',
      uid: 'u1',
      resourceVersion: '42',
      generation: 1,
      creationTimestamp: '2026-01-01T00:00:00Z',
      deletionTimestamp: '2026-01-01T00:01:00Z',
      finalizers: ['kruntimes.io/registration-cleanup'],
    });
  });
});

describe('transitionSpec', () => {
  it.each<[string, Run['spec'], Run['spec']]>([
    [
      'a task: its args, source text, env, timeout, TTL, parent and creator dropped',
      FULL.spec,
      {
        runtime: 'python',
        source: {},
        mode: { task: {} },
        cancelRequested: true,
        retryPolicy: { maxAttempts: 2, retrySafe: true },
        artifacts: { store: 'st', outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }] },
      },
    ],
    [
      'a function keeps its handler and timeouts',
      { runtime: 'py', source: { configMapKeyRef: { name: 'c', key: 'k' } }, mode: { function: { handler: 'h', idleTimeoutSeconds: 5 } } },
      { runtime: 'py', source: {}, mode: { function: { handler: 'h', idleTimeoutSeconds: 5 } } },
    ],
    [
      'a Run executed elsewhere keeps its origin (the recorded result is what its transition checks)',
      {
        runtime: 'py',
        source: { inline: 'x' },
        mode: { task: {} },
        origin: {
          local: {
            runId: '20260101-000000-abcdef',
            lockDigest: 'sha256:1',
            result: { phase: 'Succeeded', reason: 'Completed', message: '', startTime: 't', completionTime: 't' },
          },
        },
      },
      {
        runtime: 'py',
        source: {},
        mode: { task: {} },
        origin: {
          local: {
            runId: '20260101-000000-abcdef',
            lockDigest: 'sha256:1',
            result: { phase: 'Succeeded', reason: 'Completed', message: '', startTime: 't', completionTime: 't' },
          },
        },
      },
    ],
  ])('%s', (_name, spec, expected) => {
    expect(transitionSpec(spec)).toStrictEqual(expected);
  });
});

describe('projectedRun', () => {
  it('puts the spec and status given under the kept metadata', () => {
    expect(projectedRun(FULL, { runtime: 'python', source: {}, mode: { task: {} } }, { phase: 'Pending' })).toStrictEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: runIdentity(FULL.metadata),
      spec: { runtime: 'python', source: {}, mode: { task: {} } },
      status: { phase: 'Pending' },
    });
  });

  it('leaves an absent status absent', () => {
    expect(projectedRun(FULL, FULL.spec, undefined)).not.toHaveProperty('status');
  });
});
