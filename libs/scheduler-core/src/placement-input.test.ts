import type { V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { currentTemplateHash, podInfo, scalingFacts } from './placement-input.ts';

function replicaSet(revision: string | undefined, hash: string | undefined): V1ReplicaSet {
  return {
    metadata: {
      ...(revision === undefined ? {} : { annotations: { 'deployment.kubernetes.io/revision': revision } }),
      ...(hash === undefined ? {} : { labels: { 'pod-template-hash': hash } }),
    },
  };
}

describe('currentTemplateHash', () => {
  it.each<[string, V1ReplicaSet[], string | undefined]>([
    ['no ReplicaSet', [], undefined],
    ['one', [replicaSet('1', 'aaa')], 'aaa'],
    ['the highest revision, numerically (10 after 9)', [replicaSet('9', 'old'), replicaSet('10', 'new'), replicaSet('2', 'older')], 'new'],
    ['a rollback: the older template got the highest revision', [replicaSet('3', 'b'), replicaSet('4', 'a')], 'a'],
    [
      'a ReplicaSet without a revision or a hash is skipped',
      [replicaSet(undefined, 'x'), replicaSet('5', undefined), replicaSet('1', 'ok')],
      'ok',
    ],
    ['a revision that is no integer is skipped', [replicaSet('x', 'bad'), replicaSet('1', 'ok')], 'ok'],
  ])('%s', (_name, replicaSets, hash) => {
    expect(currentTemplateHash(replicaSets)).toBe(hash);
  });
});

function runtimePod(extra: { hash?: string; annotations?: Record<string, string>; ready?: boolean } = {}): V1Pod {
  return {
    metadata: {
      name: 'p',
      uid: 'u',
      labels: extra.hash === undefined ? {} : { 'pod-template-hash': extra.hash },
      ...(extra.annotations === undefined ? {} : { annotations: extra.annotations }),
    },
    spec: { containers: [] },
    status: { podIP: '127.0.0.2', conditions: [{ type: 'Ready', status: extra.ready === false ? 'False' : 'True' }] },
  };
}

describe('podInfo', () => {
  it.each<[string, V1Pod, string | undefined, { scaleDown: boolean; outdated: boolean; ready: boolean }]>([
    ['a plain ready Pod', runtimePod({ hash: 'a' }), 'a', { scaleDown: false, outdated: false, ready: true }],
    [
      'marked for scale-down',
      runtimePod({ annotations: { 'kruntimes.io/scale-down': 'true' } }),
      undefined,
      { scaleDown: true, outdated: false, ready: true },
    ],
    [
      'a scale-down annotation other than "true" marks nothing',
      runtimePod({ annotations: { 'kruntimes.io/scale-down': 'false' } }),
      undefined,
      { scaleDown: false, outdated: false, ready: true },
    ],
    ['of an older template', runtimePod({ hash: 'old' }), 'new', { scaleDown: false, outdated: true, ready: true }],
    ['newest template unknown: not outdated', runtimePod({ hash: 'old' }), undefined, { scaleDown: false, outdated: false, ready: true }],
    ['a Pod without a hash: not outdated', runtimePod(), 'new', { scaleDown: false, outdated: false, ready: true }],
    ['not ready', runtimePod({ ready: false }), undefined, { scaleDown: false, outdated: false, ready: false }],
  ])('%s', (_name, pod, currentHash, expected) => {
    expect(podInfo(pod, currentHash)).toMatchObject(expected);
  });
});

describe('scalingFacts', () => {
  it.each<[string, Parameters<typeof scalingFacts>[0], ReturnType<typeof scalingFacts>]>([
    ['no Runtime', undefined, undefined],
    ['without spec.scaling', { metadata: { name: 'py' }, spec: { replicas: 3 } }, undefined],
    [
      'with it',
      { metadata: { name: 'py' }, spec: { replicas: 3, scaling: { maxReplicas: 8 } } },
      { runtime: 'py', desiredPods: 3, maxPods: 8 },
    ],
    [
      'replicas defaulted',
      { metadata: { name: 'py' }, spec: { scaling: { maxReplicas: 8 } } },
      { runtime: 'py', desiredPods: 1, maxPods: 8 },
    ],
  ])('%s', (_name, runtime, facts) => {
    expect(scalingFacts(runtime)).toEqual(facts);
  });
});
