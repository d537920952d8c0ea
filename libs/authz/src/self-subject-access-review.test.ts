import { KubeConfig } from '@kubernetes/client-node';
import { isKruntimesError } from '@kruntimes/errors';
import { decisionOf, selfSubjectAccessReviewer } from './self-subject-access-review.ts';

const review = (status: Record<string, unknown>): string => JSON.stringify({ kind: 'SelfSubjectAccessReview', status });
/** What kube-apiserver v1.36 answered the review itself in the first ~100 ms after a restart (issue 21). */
const RESTART_403 = JSON.stringify({
  kind: 'Status',
  status: 'Failure',
  message:
    'selfsubjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "selfsubjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope',
  reason: 'Forbidden',
  code: 403,
});

describe('decisionOf', () => {
  it.each([
    [201, review({ allowed: true }), 'allowed', false],
    [200, review({ allowed: true }), 'allowed', false],
    [201, review({ allowed: true, evaluationError: 'role "x" not found' }), 'allowed', true],
    [201, review({ allowed: false }), 'denied', false],
    [201, review({ allowed: false, reason: '' }), 'denied', false],
    [201, review({ allowed: false, evaluationError: '' }), 'denied', false],
    [201, review({ allowed: false, evaluationError: 'role.rbac.authorization.k8s.io "run-reader" not found' }), 'denied', true],
    [201, review({ allowed: false, evaluationError: 42 }), 'denied', false],
    [401, '{"kind":"Status","code":401}', 'unauthenticated', false],
    [401, 'not json', 'unauthenticated', false],
  ] as const)('HTTP %d %s -> %s (evaluation error: %s)', (status, body, decision, evaluationError) => {
    expect(decisionOf(status, body)).toEqual({ decision, evaluationError });
  });

  function thrownBy(status: number, body: string): unknown {
    try {
      decisionOf(status, body);
    } catch (error) {
      return error;
    }
    return undefined;
  }

  // No decision could be had: the caller is told to retry, and nothing is cached.
  it.each([
    [403, RESTART_403, /refused the SelfSubjectAccessReview itself \(HTTP 403: selfsubjectaccessreviews.* is forbidden/],
    [403, '', /refused the SelfSubjectAccessReview itself \(HTTP 403\)/],
    [429, 'too many', /HTTP 429$/],
    [500, '{"kind":"Status","message":"etcd is down"}', /HTTP 500: etcd is down/],
    [502, '<html>bad gateway</html>', /HTTP 502$/],
    [503, '{"kind":"Status","message":"the server is currently unable to handle the request"}', /HTTP 503: the server is currently/],
    [504, '', /HTTP 504$/],
  ] as const)('HTTP %d %s is AuthorizationUnavailable, not a decision', (status, body, message) => {
    const thrown = thrownBy(status, body);
    expect(isKruntimesError(thrown, 'AuthorizationUnavailable')).toBe(true);
    expect((thrown as Error).message).toMatch(message);
  });

  // An answer that is not a review: a defect somewhere, not a passing outage.
  it.each([
    [201, 'not json', /not JSON/],
    [200, '', /not JSON/],
    [201, '{"status":{}}', /no status.allowed/],
    [201, review({ allowed: 'yes' }), /no status.allowed/],
    [201, 'null', /no status.allowed/],
    [400, '{"kind":"Status","message":"bad"}', /HTTP 400: bad/],
    [404, '', /HTTP 404$/],
    [302, '', /HTTP 302$/],
  ] as const)('HTTP %d %s is an Internal error, not a decision', (status, body, message) => {
    const thrown = thrownBy(status, body);
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
