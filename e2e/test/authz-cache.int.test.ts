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

test('repeated invokes within the TTL send no review; after the TTL one is sent again; a revoked RoleBinding takes effect within the TTL', async () => {
  expect(await invokeAsBob()).toBe(200);
  const afterFirst = await reviewsSent();
  expect(afterFirst).toBeGreaterThanOrEqual(1);

  for (let i = 0; i < 10; i += 1) expect(await invokeAsBob()).toBe(200);
  expect(await reviewsSent()).toBe(afterFirst);

  // Past the TTL the decision is looked up again (and still allowed).
  await new Promise((resolve) => setTimeout(resolve, TTL_MS + 1_000));
  expect(await invokeAsBob()).toBe(200);
  expect(await reviewsSent()).toBe(afterFirst + 1);

  // Revoke: the cached allow may serve until its TTL ends, never longer.
  const revokedAt = Date.now();
  await system.rbac.deleteNamespacedRoleBinding({ namespace: system.name, name: 'get-runs-bob-fn' });
  await waitFor('bob refused after the RoleBinding was deleted', async () => ((await invokeAsBob()) === 403 ? true : undefined), {
    timeoutMs: TTL_MS + 10_000,
    intervalMs: 1_000,
  });
  const tookMs = Date.now() - revokedAt;
  expect(tookMs).toBeLessThanOrEqual(TTL_MS + 2_000);
}, 150_000);
