import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INVOCATION_ID_HEADER } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { pathExists } from '@kruntimes/host';
import { ApiException } from '@kubernetes/client-node';
import { waitFor } from '@kruntimes/testing';
import type { HttpAnswer } from '@kruntimes/testing';
import { System, invokeApiViolations } from '../src/index.ts';

// The rows of the HTTP table (under "Response" in docs/invoke-contract.md) that runtimed decides, caused for real and
// seen as the client sees them: through the HTTPS gateway, as HTTP status and JSON body.
// (401/400/413/415 at the gateway are in gateway.int.test.ts; a lost owner's 503 in
// apps/stale-recovery/test/gateway.int.test.ts.) Every answer is also held to the invoke
// API's OpenAPI document (docs/invoke-api.openapi.yaml): status, headers and JSON body.

const PYTHON = `
import os, time

def handle(event, context):
    if isinstance(event, dict) and "marker" in event:
        open(event["marker"], "w").close()
    if isinstance(event, dict) and "release" in event:
        # Held until the test says so (bounded by "sleep"), not for a guessed while.
        deadline = time.monotonic() + event["sleep"]
        while not os.path.exists(event["release"]) and time.monotonic() < deadline:
            time.sleep(0.02)
    elif isinstance(event, dict) and "sleep" in event:
        time.sleep(event["sleep"])
    if isinstance(event, dict) and event.get("fail"):
        raise ValueError("the handler refuses")
    return {"echo": event}
`;

let system: System;
let fn: Run;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'http-table-'));
  system = await System.start({ prefix: 'e2e-http-table' });
  // Room for three Runs on one Pod (fn, other, again): a fourth stays Pending (not Ready).
  await system.createRuntime('py', { language: 'python', runs: 3 });
  await system.createFunctionRun('fn', 'py', PYTHON, 'main:handle', {
    mode: { function: { handler: 'main:handle', invocationTimeoutSeconds: 2 } },
  });
  await system.createFunctionRun('other', 'py', PYTHON, 'main:handle');
  fn = await system.waitReady('fn');
  await system.waitReady('other');
  await system.grantGetRuns('alice');
}, 180_000);

afterAll(async () => {
  await system.stop();
  await rm(scratch, { recursive: true, force: true });
});

const uidOf = (run: Run): string => run.metadata.uid ?? '';
const errorOf = (answer: HttpAnswer): unknown => (answer.json as { error?: unknown }).error;

async function invokeAs(user: 'alice' | 'bob', run: Run | string, body: unknown, invocationId?: string): Promise<HttpAnswer> {
  const uid = typeof run === 'string' ? run : uidOf(run);
  const answer = await system.invoke({
    runtime: 'py',
    uid,
    token: system.token(user),
    body: JSON.stringify(body),
    ...(invocationId === undefined ? {} : { headers: { [INVOCATION_ID_HEADER]: invocationId } }),
  });
  expect({ status: answer.status, violations: invokeApiViolations(system.invokeUrl('py', uid), answer) }).toEqual({
    status: answer.status,
    violations: [],
  });
  return answer;
}

test('200, and 403 for a caller without RBAC on the Run', async () => {
  const ok = await invokeAs('alice', fn, { n: 1 });
  expect(ok.status).toBe(200);
  expect(ok.json).toMatchObject({ result: { echo: { n: 1 } }, attempt: 1 });

  const forbidden = await invokeAs('bob', fn, { n: 1 }, 'bob-1');
  expect(forbidden.status).toBe(403);
  expect(forbidden.json).toMatchObject({ invocationId: 'bob-1', error: { code: 'Forbidden', source: 'platform' } });
});

test('404 for an unknown UID and for the UID of a deleted Run whose name was created again', async () => {
  const unknown = await invokeAs('alice', randomUUID(), {});
  expect(unknown.status).toBe(404);
  expect(errorOf(unknown)).toMatchObject({ code: 'RunNotFound' });

  await system.createFunctionRun('again', 'py', PYTHON, 'main:handle');
  const first = await system.waitReady('again');
  await system.deleteRun('again');
  const deadline = Date.now() + 60_000;
  let recreated: Run | undefined;
  while (recreated === undefined && Date.now() < deadline) {
    try {
      recreated = await system.createFunctionRun('again', 'py', PYTHON, 'main:handle');
    } catch (error) {
      // 409 AlreadyExists while the old object still holds its cleanup finalizer.
      if (!(error instanceof ApiException && error.code === 409)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  expect(recreated).toBeDefined();
  const stale = await invokeAs('alice', first, {});
  expect(stale.status).toBe(404);
  expect(errorOf(stale)).toMatchObject({ code: 'RunNotFound' });
});

test('503 for a Run that is not Ready (no capacity left, still Pending)', async () => {
  const pending = await system.createFunctionRun('pending', 'py', PYTHON, 'main:handle');
  const answer = await invokeAs('alice', pending, {});
  expect(answer.status).toBe(503);
  expect(errorOf(answer)).toMatchObject({ code: 'RunNotReady', source: 'platform' });
  expect(answer.headers['retry-after']).toBe('1');
  await system.deleteRun('pending');
});

test('429 for an overlapping invocation, 504 past invocationTimeoutSeconds, 500 with source function when the handler raises', async () => {
  const marker = join(scratch, 'slow.started');
  const release = join(scratch, 'slow.release');
  // In flight until released ('other' has the default invocation timeout, far away): the
  // overlapping invoke is answered whatever the machine's load.
  const held = await system.getRun('other');
  const slow = invokeAs('alice', held, { sleep: 20, marker, release });
  await waitFor('the first invocation in flight', async () => ((await pathExists(marker)) ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  const overlapping = await invokeAs('alice', held, {});
  expect(overlapping.status).toBe(429);
  expect(errorOf(overlapping)).toMatchObject({ code: 'InvocationInFlight', source: 'platform' });
  expect(overlapping.headers['retry-after']).toBe('1');
  await writeFile(release, '');
  expect((await slow).status).toBe(200);

  const timedOut = await invokeAs('alice', fn, { sleep: 10 });
  expect(timedOut.status).toBe(504);
  expect(errorOf(timedOut)).toMatchObject({ code: 'InvocationTimeout', source: 'platform' });

  const raised = await invokeAs('alice', fn, { fail: true }, 'raise-1');
  expect(raised.status).toBe(500);
  expect(raised.headers[INVOCATION_ID_HEADER]).toBe('raise-1');
  expect(raised.json).toMatchObject({ invocationId: 'raise-1', error: { code: 'FunctionFailed', source: 'function' } });
  expect(JSON.stringify(errorOf(raised))).toContain('the handler refuses');
}, 60_000);
