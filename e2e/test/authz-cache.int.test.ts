import type { Run } from '@kruntimes/api';
import { DEFAULTS } from '@kruntimes/api';
import { waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';

// The authorization cache seen from outside, through the gateway and a real runtimed:
// the SelfSubjectAccessReviews runtimed sends are counted on its own /metrics.

const HANDLER = `
def handle(event, context):
    return event
`;

const TTL_MS = DEFAULTS.authzCacheTtlSeconds * 1000;

let system: System;
let run: Run;

beforeAll(async () => {
  system = await System.start({ prefix: 'e2e-authz' });
  await system.createRuntime('py', { language: 'python' });
  await system.createFunctionRun('fn', 'py', HANDLER, 'main:handle');
  run = await system.waitReady('fn');
  await system.grantGetRuns('bob', 'fn');
}, 180_000);

afterAll(async () => {
  await system.stop();
});

/** SelfSubjectAccessReviews sent by the owner's runtimed so far, all outcomes. */
async function reviewsSent(): Promise<number> {
  const pod = await system.assignedPod('fn');
  const response = await fetch(`http://${pod.status?.podIP ?? ''}:9464/metrics`, { signal: AbortSignal.timeout(5_000) });
  const text = await response.text();
  let total = 0;
  for (const match of text.matchAll(/^kruntimes_authz_reviews_total\{[^}]*\} (\d+)/gm)) total += Number(match[1]);
  return total;
}

async function invokeAsBob(): Promise<number> {
  const answer = await system.invoke({ runtime: 'py', uid: run.metadata.uid ?? '', token: system.token('bob'), body: '{"n":1}' });
  return answer.status;
}

/** How often the revoked caller tries again. */
const RETRY_MS = 250;

test('repeated invokes within the TTL send no review; after the TTL one is sent again; a revoked RoleBinding takes effect within the TTL', async () => {
  expect(await invokeAsBob()).toBe(200);
  const firstReviewBy = Date.now();
  const afterFirst = await reviewsSent();
  expect(afterFirst).toBeGreaterThanOrEqual(1);

  // Only invokes that end inside the TTL of that review prove the cache: a loaded machine
  // may not fit all ten in it, but it must fit some.
  let withinTtl = 0;
  for (let i = 0; i < 10 && Date.now() - firstReviewBy < TTL_MS - 1_000; i += 1) {
    expect(await invokeAsBob()).toBe(200);
    if (Date.now() - firstReviewBy < TTL_MS) withinTtl += 1;
  }
  expect(withinTtl).toBeGreaterThan(0);
  expect(await reviewsSent()).toBe(afterFirst);

  // Past the TTL the decision is looked up again (and still allowed).
  await new Promise((resolve) => setTimeout(resolve, TTL_MS + 1_000));
  expect(await invokeAsBob()).toBe(200);
  const reviewedAgainBy = Date.now();
  expect(await reviewsSent()).toBe(afterFirst + 1);

  // Revoke: the cached allow may serve until its TTL ends, never longer. The bound is that
  // TTL from the last review, plus one retry interval and twice the slowest invoke seen
  // while waiting: the invoke in flight at the expiry, then the one that sees the refusal.
  await system.rbac.deleteNamespacedRoleBinding({ namespace: system.name, name: 'get-runs-bob-fn' });
  let slowestInvokeMs = 0;
  const refusedAt = await waitFor(
    'bob refused after the RoleBinding was deleted',
    async () => {
      const started = Date.now();
      const status = await invokeAsBob();
      slowestInvokeMs = Math.max(slowestInvokeMs, Date.now() - started);
      return status === 403 ? Date.now() : undefined;
    },
    { timeoutMs: TTL_MS + 30_000, intervalMs: RETRY_MS },
  );
  expect(refusedAt - reviewedAgainBy).toBeLessThanOrEqual(TTL_MS + RETRY_MS + 2 * slowestInvokeMs);
}, 150_000);
