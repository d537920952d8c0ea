// AccessReviewer while kube-apiserver is stopped and started again (issue 21): a caller with
// RBAC whose decision is not cached gets AuthorizationUnavailable (503, retry), never
// Internal, and nothing is cached; once the API server is back the same caller is allowed
// without waiting out a long TTL. A control plane of its own: the shared one must not stop.
import { ControlPlane, NamespaceAccess, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { isKruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { AccessReviewer, DEFAULT_MAX_DENIED_TTL_MS, DEFAULT_MAX_TTL_MS } from '../src/access-reviewer.ts';
import { AuthzCounters } from '../src/metrics.ts';
import type { AccessRequest } from '../src/cache-policy.ts';
import { codeOf } from './code-of.ts';

let controlPlane: ControlPlane;
let namespace: TestNamespace;

beforeAll(async () => {
  controlPlane = await ControlPlane.start({ controllerManager: false });
  namespace = await controlPlane.cluster.createNamespace({ prefix: 'authz-restart' });
  const access = new NamespaceAccess(controlPlane.cluster, namespace.name);
  await access.grantGetRuns('alice');
  await access.grantGetRuns('bob');
}, 120_000);

afterAll(async () => {
  await controlPlane.stop();
});

function access(user: string): AccessRequest {
  // A SelfSubjectAccessReview needs no Run (nor its CRD) to exist: RBAC alone decides.
  return { token: controlPlane.cluster.user(user).token, namespace: namespace.name, name: 'fn', uid: 'uid-1' };
}

test('API server stopped: an uncached caller gets AuthorizationUnavailable and nothing is cached; back: allowed within the denial TTL', async () => {
  const admin = controlPlane.cluster.kubeConfig();
  // RBAC reaches the authorizer through an informer: wait until both grants are seen.
  const uncached = new AccessReviewer({ kubeConfig: admin, maxTtlMs: 0 });
  for (const user of ['alice', 'bob']) {
    await waitFor(`${user} allowed`, async () => ((await codeOf(uncached.authorize(access(user)))) === 'ok' ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
  }

  const metrics = new AuthzCounters();
  const reviewer = new AccessReviewer({ kubeConfig: admin, metrics, reviewTimeoutMs: 2_000 });
  expect(await codeOf(reviewer.authorize(access('alice')))).toBe('ok');
  expect(reviewer.size).toBe(1);

  await controlPlane.stopApiServer();
  let restarted: Promise<void> | undefined;
  try {
    // bob's decision is not cached: no answer can be had, and none is remembered.
    const refused = await reviewer.authorize(access('bob')).catch((error: unknown) => error);
    expect(isKruntimesError(refused, 'AuthorizationUnavailable')).toBe(true);
    expect((refused as { httpStatus: number }).httpStatus).toBe(503);
    expect(await codeOf(reviewer.authorize(access('bob')))).toBe('AuthorizationUnavailable');
    expect(reviewer.size).toBe(1);
    expect(metrics.reviews.error).toBe(2);
    // alice's allow is still cached: she is served while the API server is down.
    expect(await codeOf(reviewer.authorize(access('alice')))).toBe('ok');

    // bob retries while kube-apiserver starts: until its RBAC is loaded he may see only
    // "unavailable" (or a short-lived denial), never Internal.
    const seen = new Set<ErrorCode | 'ok'>();
    let readyAt = Number.POSITIVE_INFINITY;
    restarted = controlPlane.startApiServer().then(() => {
      readyAt = performance.now();
    });
    const servedAt = await waitFor(
      'bob allowed after the restart',
      async () => {
        const code = await codeOf(reviewer.authorize(access('bob')));
        seen.add(code);
        return code === 'ok' ? performance.now() : undefined;
      },
      // Bounded by the denial TTL (plus the start), far below the 30 s an allow is kept.
      { timeoutMs: 60_000 + DEFAULT_MAX_DENIED_TTL_MS, intervalMs: 50 },
    );
    await restarted;
    expect([...seen].filter((code) => code !== 'AuthorizationUnavailable' && code !== 'Forbidden' && code !== 'ok')).toEqual([]);
    // Served no later than one denial TTL after /readyz, not an allow TTL.
    expect(servedAt - readyAt).toBeLessThan(DEFAULT_MAX_DENIED_TTL_MS + 1_000);
    expect(DEFAULT_MAX_DENIED_TTL_MS + 1_000).toBeLessThan(DEFAULT_MAX_TTL_MS);
    expect(await codeOf(reviewer.authorize(access('bob')))).toBe('ok');
    expect(reviewer.size).toBe(2);
  } finally {
    // Its failure, if any, is reported by the assertions above; afterAll stops everything.
    await restarted?.catch(() => undefined);
  }
}, 180_000);
