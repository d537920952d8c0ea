import { KubeConfig } from '@kubernetes/client-node';
import { isKruntimesError } from '@kruntimes/errors';
import { decisionOf, selfSubjectAccessReviewer } from './self-subject-access-review.ts';

const review = (allowed: unknown): string => JSON.stringify({ kind: 'SelfSubjectAccessReview', status: { allowed } });

describe('decisionOf', () => {
  it.each([
    [201, review(true), 'allowed'],
    [200, review(true), 'allowed'],
    [201, review(false), 'denied'],
    [401, '{"kind":"Status","code":401}', 'unauthenticated'],
    [403, '{"kind":"Status","code":403}', 'denied'],
  ] as const)('HTTP %d %s -> %s', (status, body, decision) => {
    expect(decisionOf(status, body)).toBe(decision);
  });

  it.each([
    [500, '{"kind":"Status","message":"etcd is down"}', /HTTP 500: etcd is down/],
    [429, 'too many', /HTTP 429$/],
    [201, 'not json', /not JSON/],
    [201, '{"status":{}}', /no status.allowed/],
    [201, 'null', /no status.allowed/],
  ] as const)('HTTP %d %s is an Internal error, not a decision', (status, body, message) => {
    let thrown: unknown;
    try {
      decisionOf(status, body);
    } catch (error) {
      thrown = error;
    }
    expect(isKruntimesError(thrown, 'Internal')).toBe(true);
    expect((thrown as Error).message).toMatch(message);
  });
});

function kubeConfig(server: string | undefined): KubeConfig {
  const config = new KubeConfig();
  if (server !== undefined) {
    config.loadFromOptions({
      clusters: [{ name: 'c', server, skipTLSVerify: false }],
      users: [{ name: 'u', token: 'service-own-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  }
  return config;
}

describe('selfSubjectAccessReviewer', () => {
  it('refuses a kubeconfig without a current cluster', () => {
    expect(() => selfSubjectAccessReviewer(kubeConfig(undefined))).toThrow(/no current cluster/);
  });

  it('refuses a plaintext API server: the caller token would travel in the clear', () => {
    expect(() => selfSubjectAccessReviewer(kubeConfig('http://127.0.0.1:1'))).toThrow(/must be https/);
  });
});
