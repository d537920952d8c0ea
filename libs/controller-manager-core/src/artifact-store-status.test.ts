import type { ArtifactStoreStatus, Condition } from '@kruntimes/api';
import { artifactStoreStatus } from './artifact-store-status.ts';
import type { ArtifactStorePassOutcome } from './artifact-store-status.ts';

const T0 = '2026-12-03T12:00:00Z';
const T1 = '2026-12-03T12:05:00Z';
const cleaned: ArtifactStorePassOutcome = { kind: 'cleaned', removed: 2 };
const noSecret: ArtifactStorePassOutcome = { kind: 'unavailable', reason: 'SecretNotFound', message: 'Secret ns/c not found' };
const unreachable: ArtifactStorePassOutcome = {
  kind: 'unavailable',
  reason: 'StoreUnreachable',
  message: 'object store: LIST: ECONNREFUSED',
};

function ready(status: 'True' | 'False', reason: string, at: string, generation = 1): Condition[] {
  return [{ type: 'Ready', status, reason, message: expect.any(String) as string, lastTransitionTime: at, observedGeneration: generation }];
}

test.each<[string, ArtifactStoreStatus | undefined, ArtifactStorePassOutcome, ArtifactStoreStatus]>([
  [
    'first pass succeeds',
    undefined,
    cleaned,
    { observedGeneration: 1, conditions: ready('True', 'StoreReachable', T1), lastCleanupTime: T1 },
  ],
  ['first pass without the Secret', undefined, noSecret, { observedGeneration: 1, conditions: ready('False', 'SecretNotFound', T1) }],
  [
    'ready stays ready: the transition time stays, the cleanup time moves',
    { observedGeneration: 1, conditions: ready('True', 'StoreReachable', T0), lastCleanupTime: T0 },
    cleaned,
    { observedGeneration: 1, conditions: ready('True', 'StoreReachable', T0), lastCleanupTime: T1 },
  ],
  [
    'ready flips to unreachable: the transition time moves, the last cleanup time is kept',
    { observedGeneration: 1, conditions: ready('True', 'StoreReachable', T0), lastCleanupTime: T0 },
    unreachable,
    { observedGeneration: 1, conditions: ready('False', 'StoreUnreachable', T1), lastCleanupTime: T0 },
  ],
  [
    'not ready for another reason: the transition time stays',
    { observedGeneration: 1, conditions: ready('False', 'SecretNotFound', T0) },
    unreachable,
    { observedGeneration: 1, conditions: ready('False', 'StoreUnreachable', T0) },
  ],
])('%s', (_case, previous, outcome, expected) => {
  expect(artifactStoreStatus(previous, outcome, 1, T1)).toEqual(expected);
});

test('observedGeneration follows the generation acted on', () => {
  const status = artifactStoreStatus({ observedGeneration: 1, conditions: [] }, cleaned, 3, T1);
  expect([status.observedGeneration, status.conditions?.[0]?.observedGeneration]).toEqual([3, 3]);
});
