// AccessReviewer against the real API server ("Request" in docs/invoke-contract.md): SelfSubjectAccessReview
// with the caller's own token, decisions cached at most maxTtlMs and never past the JWT exp.
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { decodeJwt } from 'jose';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { ErrorCode } from '@kruntimes/errors';
import { Cluster, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { AccessReviewer } from '../src/access-reviewer.ts';
import { AuthzCounters } from '../src/metrics.ts';
import type { AccessRequest } from '../src/cache-policy.ts';
import { codeOf } from './code-of.ts';

const cluster = Cluster.fromEnvironment();
// The reviewer is given the admin's kubeconfig on purpose: it must use only its cluster,
// so alice's and bob's answers below prove the admin identity never answered for them.
const admin = cluster.kubeConfig();
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const core = admin.makeApiClient(CoreV1Api);
const WAIT = { timeoutMs: 30_000, intervalMs: 100 };

let namespace: TestNamespace;
let run: { name: string; uid: string };

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'authz' });
  const body: Run = {
    apiVersion: API_GROUP_VERSION,
    kind: 'Run',
    metadata: { name: 'fn' },
    spec: { runtime: 'python', source: { inline: 'def h(e, c): return e' }, mode: { function: { handler: 'h' } } },
  };
  const created = (await admin
    .makeApiClient(CustomObjectsApi)
    .createNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural: RUN_PLURAL, body })) as Run;
  run = { name: 'fn', uid: created.metadata.uid ?? '' };
});
afterEach(async () => {
  await namespace.delete();
});

function access(token: string): AccessRequest {
  return { token, namespace: namespace.name, name: run.name, uid: run.uid };
}

/** Role `run-reader` (get runs) bound to `subject`. */
async function grantGetRuns(subject: { kind: 'User'; name: string } | { kind: 'ServiceAccount'; name: string }): Promise<void> {
  await rbac
    .createNamespacedRole({
      namespace: namespace.name,
      body: { metadata: { name: 'run-reader' }, rules: [{ apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get'] }] },
    })
    .catch((error: unknown) => {
      if (!(error instanceof Error && error.message.includes('AlreadyExists'))) throw error;
    });
  await rbac.createNamespacedRoleBinding({
    namespace: namespace.name,
    body: {
      metadata: { name: `${subject.name}-reads-runs` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'run-reader' },
      subjects: [
        subject.kind === 'User' ? { apiGroup: 'rbac.authorization.k8s.io', ...subject } : { ...subject, namespace: namespace.name },
      ],
    },
  });
}

/** What the API server says right now (no cache), waited for: RBAC reaches the authorizer through an informer. */
async function serverSays(token: string, expected: ErrorCode | 'ok'): Promise<void> {
  const uncached = new AccessReviewer({ kubeConfig: admin, maxTtlMs: 0 });
  await waitFor(
    `the API server answers ${expected}`,
    async () => ((await codeOf(uncached.authorize(access(token)))) === expected ? true : undefined),
    WAIT,
  );
}

test('alice is Forbidden without RBAC and allowed once a RoleBinding grants get on runs; bob stays Forbidden', async () => {
  const alice = cluster.user('alice').token;
  const bob = cluster.user('bob').token;
  const metrics = new AuthzCounters();
  expect(await codeOf(new AccessReviewer({ kubeConfig: admin, metrics }).authorize(access(alice)))).toBe('Forbidden');
  expect(metrics.reviews.denied).toBe(1);

  await grantGetRuns({ kind: 'User', name: 'alice' });
  await serverSays(alice, 'ok');
  const reviewer = new AccessReviewer({ kubeConfig: admin, metrics });
  expect(await codeOf(reviewer.authorize(access(alice)))).toBe('ok');
  expect(await codeOf(reviewer.authorize(access(bob)))).toBe('Forbidden');
  // The grant names one Run resource type in one namespace.
  expect(await codeOf(reviewer.authorize({ ...access(alice), namespace: 'default' }))).toBe('Forbidden');
});

test('a garbage token is Unauthenticated', async () => {
  const metrics = new AuthzCounters();
  const reviewer = new AccessReviewer({ kubeConfig: admin, metrics });
  expect(await codeOf(reviewer.authorize(access('not-a-token-the-api-server-knows')))).toBe('Unauthenticated');
  expect(await codeOf(reviewer.authorize(access('aaa.bbb.ccc')))).toBe('Unauthenticated');
  expect(metrics.reviews.unauthenticated).toBe(2);
});

test('repeated calls within the TTL send no new review; concurrent misses share one; after the TTL it reviews again', async () => {
  const alice = cluster.user('alice').token;
  await grantGetRuns({ kind: 'User', name: 'alice' });
  await serverSays(alice, 'ok');

  const metrics = new AuthzCounters();
  const reviewer = new AccessReviewer({ kubeConfig: admin, metrics });
  const concurrent = await Promise.all(Array.from({ length: 8 }, () => codeOf(reviewer.authorize(access(alice)))));
  expect(concurrent).toEqual(Array(8).fill('ok'));
  for (let i = 0; i < 5; i += 1) await reviewer.authorize(access(alice));
  expect(metrics.reviewsSent).toBe(1);
  expect(metrics.cacheRequests).toEqual({ hit: 5, miss: 8 });

  const short = new AuthzCounters();
  const shortLived = new AccessReviewer({ kubeConfig: admin, maxTtlMs: 1500, metrics: short });
  await shortLived.authorize(access(alice));
  await sleep(1600);
  await shortLived.authorize(access(alice));
  expect(short.reviewsSent).toBe(2);
});

test('deleting the RoleBinding takes effect once the cached decision has expired, not before', async () => {
  const alice = cluster.user('alice').token;
  await grantGetRuns({ kind: 'User', name: 'alice' });
  await serverSays(alice, 'ok');

  // A clock the test moves, so "within the TTL" does not depend on the machine's speed.
  const clock = { now: Date.now() };
  const metrics = new AuthzCounters();
  const reviewer = new AccessReviewer({ kubeConfig: admin, maxTtlMs: 1500, now: () => clock.now, metrics });
  expect(await codeOf(reviewer.authorize(access(alice)))).toBe('ok');

  await rbac.deleteNamespacedRoleBinding({ namespace: namespace.name, name: 'alice-reads-runs' });
  await serverSays(alice, 'Forbidden');

  clock.now += 1499;
  expect(await codeOf(reviewer.authorize(access(alice)))).toBe('ok');
  expect(metrics.reviewsSent).toBe(1);
  clock.now += 1;
  expect(await codeOf(reviewer.authorize(access(alice)))).toBe('Forbidden');
  expect(metrics.reviews).toEqual({ allowed: 1, denied: 1, unauthenticated: 0, error: 0 });
});

test('a service-account token is reviewed as itself, and its decision is never cached past its exp', async () => {
  await core.createNamespacedServiceAccount({ namespace: namespace.name, body: { metadata: { name: 'caller' } } });
  await grantGetRuns({ kind: 'ServiceAccount', name: 'caller' });
  const requested = await core.createNamespacedServiceAccountToken({
    namespace: namespace.name,
    name: 'caller',
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const token = requested.status?.token ?? '';
  const exp = decodeJwt(token).exp ?? 0;
  expect(exp).toBeGreaterThan(0);
  await serverSays(token, 'ok');

  // Our clock says the token has one second left (the API server, on real time, still accepts it).
  const clock = { now: exp * 1000 - 1000 };
  const metrics = new AuthzCounters();
  const reviewer = new AccessReviewer({ kubeConfig: admin, now: () => clock.now, metrics });
  await reviewer.authorize(access(token));
  clock.now += 999;
  await reviewer.authorize(access(token));
  expect(metrics.reviewsSent).toBe(1);
  clock.now += 1; // exp reached, well within maxTtlMs (30 s)
  await reviewer.authorize(access(token));
  expect(metrics.reviewsSent).toBe(2);
  // Past exp by our clock: answered, never cached.
  clock.now += 5000;
  await reviewer.authorize(access(token));
  await reviewer.authorize(access(token));
  expect(metrics.reviewsSent).toBe(4);
  expect(metrics.cacheRequests.hit).toBe(1);
});
