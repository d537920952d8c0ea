import type { V1Pod } from '@kubernetes/client-node';
import { deletionGraceSeconds } from './local-node.ts';

describe('deletionGraceSeconds: how long a deleted Pod gets between SIGTERM and SIGKILL', () => {
  it.each<[string, V1Pod, number]>([
    [
      'the delete named its own grace',
      { metadata: { deletionGracePeriodSeconds: 60 }, spec: { containers: [], terminationGracePeriodSeconds: 3 } },
      60,
    ],
    [
      'a delete of grace 0 (force)',
      { metadata: { deletionGracePeriodSeconds: 0 }, spec: { containers: [], terminationGracePeriodSeconds: 3 } },
      0,
    ],
    ['the Pod spec only', { metadata: {}, spec: { containers: [], terminationGracePeriodSeconds: 355 } }, 355],
    ['neither: the Kubernetes default', { metadata: {}, spec: { containers: [] } }, 30],
  ])('%s', (_name, pod, seconds) => {
    expect(deletionGraceSeconds(pod)).toBe(seconds);
  });
});
