import type { V1Pod } from '@kubernetes/client-node';
import { REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { FunctionMode, Run, RunSpec } from '@kruntimes/api';
import { findCondition } from '@kruntimes/run-state';
import { GATEWAY_HOST, RuntimeEnvironment } from './runtime-pods.ts';

const HANDLER = `
def handle(event, context):
    return event
`;

let env: RuntimeEnvironment;
let pod: V1Pod;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-fn');
  pod = await env.createRuntimePod('python-0', 'python');
});

afterAll(async () => {
  await env.stop();
});

const phase = (run: Run) => run.status?.phase;

async function readyFunction(name: string, fn: Partial<FunctionMode> = {}, spec: Partial<RunSpec> = {}): Promise<Run> {
  await env.createRun(name, { runtime: 'rt', source: { inline: HANDLER }, mode: { function: { handler: 'main:handle', ...fn } }, ...spec });
  await env.bind(name, pod);
  return env.waitForRun(name, 'Ready', (run) => phase(run) === 'Ready');
}

test('a function Run goes Scheduled -> Running -> Ready with its endpoint and Ready=True FunctionRegistered, then is cancelled', async () => {
  const run = await readyFunction('cancel-me');
  expect(run.status).toMatchObject({
    phase: 'Ready',
    attempt: 1,
    assignedPod: 'python-0',
    assignedPodUID: pod.metadata?.uid,
    endpoint: { protocol: 'HTTPS', url: `https://${GATEWAY_HOST}/v1/namespaces/${env.name}/runtimes/rt/functions/${run.metadata.uid ?? ''}:invoke` },
  });
  expect(run.status?.startTime).toBeDefined();
  expect(findCondition(run.status?.conditions, 'Ready')).toMatchObject({ status: 'True', reason: 'FunctionRegistered' });
  expect(run.metadata.finalizers).toContain(REGISTRATION_CLEANUP_FINALIZER);

  await env.patchRunSpec('cancel-me', { cancelRequested: true });
  const cancelled = await env.waitForRun('cancel-me', 'Cancelled', (r) => phase(r) === 'Cancelled');
  expect(findCondition(cancelled.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'Cancelled' });
  const final = await env.waitForRun('cancel-me', 'finalizer released', (r) => !(r.metadata.finalizers ?? []).includes(REGISTRATION_CLEANUP_FINALIZER));
  expect(phase(final)).toBe('Cancelled');
  const serverLogs = await env.logs('python-0', 'runtime-server');
  expect(serverLogs.filter((l) => l.msg === 'unregistered' && l.runUid === run.metadata.uid)).toHaveLength(1);
});
