// krt as a user runs it: the real CLI as a child process, with a kubeconfig file for a
// user, against the real control plane. Run status is moved by the test as the platform
// would (status subresource, run-state's transition), like apps/scheduler/test's act().
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, RUN_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { Run, RunSpec } from '@kruntimes/api';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { Cluster, HttpsStub, NamespaceAccess, json, kubeconfigYaml, selfSignedCertificate, waitFor } from '@kruntimes/testing';
import type { KeyPair, StubHandler, TestNamespace } from '@kruntimes/testing';
import { runKrt, startKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
/** Bounds each CLI run: a hung child fails the test instead of hanging it. */
const CLI_TIMEOUT_MS = 60_000;

let namespace: TestNamespace;
let dir: string;
let kubeconfigs: { alice: string; bob: string; noToken: string };

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'krt' });
  dir = await mkdtemp(join(tmpdir(), 'krt-int-'));
  const file = async (name: string, yaml: string): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, yaml, { mode: 0o600 });
    return path;
  };
  const params = { server: cluster.info.server, caPem: cluster.info.caPem };
  const withNamespace = (yaml: string): string => yaml.replace(/(context:\n\s+cluster: .*\n)/, `$1      namespace: ${namespace.name}\n`);
  kubeconfigs = {
    // alice's context names the test namespace, so her commands need no -n.
    alice: await file('alice.kubeconfig', withNamespace(kubeconfigYaml({ ...params, user: 'alice', token: cluster.user('alice').token }))),
    bob: await file('bob.kubeconfig', kubeconfigYaml({ ...params, user: 'bob', token: cluster.user('bob').token })),
    noToken: await file('anonymous.kubeconfig', kubeconfigYaml({ ...params, user: 'nobody', token: '' }).replace(/\n\s+token: .*\n/, '\n')),
  };
  await new NamespaceAccess(cluster, namespace.name).grantUser('alice', 'run-user', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
    // Creating a Run needs `use` on its Runtime (the admission policy).
    ...RUNTIME_USER_RULES,
  ]);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await namespace.delete();
});

/** `krt ARGS` with alice's kubeconfig unless the args name another. */
async function krt(args: string[], options: { kubeconfig?: string; stdin?: string } = {}): Promise<CliResult> {
  return runKrt(args, {
    kubeconfig: options.kubeconfig ?? kubeconfigs.alice,
    timeoutMs: CLI_TIMEOUT_MS,
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  });
}

async function createRun(name: string, spec: Partial<RunSpec> = {}): Promise<Run> {
  const body: Run = {
    apiVersion: API_GROUP_VERSION,
    kind: 'Run',
    metadata: { name },
    spec: { runtime: 'sh', source: { inline: 'echo hi' }, mode: { task: {} }, ...spec },
  };
  return (await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    body,
  })) as Run;
}

const FUNCTION: Partial<RunSpec> = {
  runtime: 'py',
  source: { inline: 'def h(e, c):\n  return e\n' },
  mode: { function: { handler: 'h' } },
};

async function getRun(name: string): Promise<Run> {
  return (await objects.getNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    name,
  })) as Run;
}

async function listRuns(): Promise<Run[]> {
  return (
    (await objects.listNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: namespace.name,
      plural: RUN_PLURAL,
    })) as { items: Run[] }
  ).items;
}

/** Plays the platform: one status write through the state machine, as admin. */
async function act(name: string, writer: WriterRole, event: RunEvent): Promise<Run> {
  const run = await getRun(name);
  const result = transition({ run, event, writer, now: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
  if (!result.ok) throw result.error;
  return (await objects.replaceNamespacedCustomObjectStatus({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    name,
    body: { ...run, status: result.status },
  })) as Run;
}

async function start(name: string): Promise<void> {
  await act(name, 'scheduler', { type: 'Bind', pod: 'pod-1', podUID: 'pod-uid-1' });
  await act(name, 'runtimed', { type: 'Claim' });
}

async function fail(name: string): Promise<void> {
  await start(name);
  await act(name, 'runtimed', { type: 'Failed', reason: 'NonZeroExit', message: 'exit 3', exitCode: 3 });
}

describe('krt get', () => {
  test('prints one Run, all Runs, JSON and YAML; unknown Runs are exit 3; no rights is exit 4', async () => {
    await createRun('task-a');
    await createRun('fn-b', FUNCTION);

    const one = await krt(['get', 'task-a']);
    expect(one).toMatchObject({ code: 0, stderr: '' });
    expect(one.stdout).toMatch(/^NAME\s+PHASE\s+REASON\s+MODE\s+RUNTIME\s+ATTEMPT\s+AGE\ntask-a\s+Pending\s+-\s+task\s+sh\s+-\s+\d+s\n$/);

    const all = await krt(['get', '-o', 'wide']);
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n').filter((line) => /^(task-a|fn-b)\s/.test(line))).toHaveLength(2);

    const asJson = await krt(['get', 'fn-b', '-o', 'json']);
    expect(asJson.code).toBe(0);
    expect((JSON.parse(asJson.stdout) as Run).spec.mode.function?.handler).toBe('h');
    const asYaml = await krt(['get', 'fn-b', '-o', 'yaml', '-n', namespace.name]);
    expect(asYaml.stdout).toMatch(/handler: h/);

    const missing = await krt(['get', 'nope']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toBe(`error: Run "nope" not found in namespace "${namespace.name}"\n`);

    const bob = await krt(['get', 'task-a', '-n', namespace.name], { kubeconfig: kubeconfigs.bob });
    expect(bob.code).toBe(4);
    expect(bob.stderr).toMatch(/^error: the API server answered HTTP 403: .*forbidden/);
  });
});

describe('krt wait', () => {
  test('--for ready returns once the function Run is Ready', async () => {
    await createRun('fn', FUNCTION);
    const waiting = krt(['wait', 'fn', '--for', 'ready', '--timeout', '60s']);
    await start('fn');
    await act('fn', 'runtimed', { type: 'Registered', endpoint: { protocol: 'HTTPS', url: 'https://127.0.0.1:1/x' } });
    expect(await waiting).toMatchObject({ code: 0, stdout: 'run/fn Ready\n' });
  });

  test('--for done returns for any terminal phase; --for ready on a finished Run is exit 5', async () => {
    await createRun('job');
    const waiting = krt(['wait', 'job', '--for', 'done']);
    await fail('job');
    expect(await waiting).toMatchObject({ code: 0, stdout: 'run/job Failed\n' });

    const never = await krt(['wait', 'job', '--for', 'ready']);
    expect(never.code).toBe(5);
    expect(never.stderr).toMatch(/finished \(Failed, NonZeroExit\) and will never be Ready/);
  });

  test('times out with exit 5; an unknown Run is exit 3', async () => {
    await createRun('stuck');
    const timedOut = await krt(['wait', 'stuck', '--for', 'done', '--timeout', '1s']);
    expect(timedOut.code).toBe(5);
    expect(timedOut.stderr).toMatch(/timed out after 1000 ms waiting for Run "stuck" to be finished \(phase Pending\)/);
    expect((await krt(['wait', 'ghost', '--for', 'ready'])).code).toBe(3);
  });
});

describe('krt retry', () => {
  test('a finished Run is retried as a new Run with parentRunRef and the same spec', async () => {
    const original = await createRun('job', {
      env: [{ name: 'K', value: 'V' }],
      timeout: '5m',
      retryPolicy: { maxAttempts: 2, retrySafe: true },
    });
    await fail('job');
    const retried = await krt(['retry', 'job']);
    expect(retried.code).toBe(0);
    const name = /^run\/(job-retry-[a-z0-9]{5})\n$/.exec(retried.stdout)?.[1] ?? '';
    expect(name).not.toBe('');
    const copy = await getRun(name);
    // The same spec but its creator: whoever retried it (alice), stamped by the admission policy.
    const { creator: _originalCreator, ...originalSpec } = original.spec;
    const { creator, ...copySpec } = copy.spec;
    expect(copySpec).toEqual({ ...originalSpec, parentRunRef: { name: 'job', uid: original.metadata.uid } });
    expect(creator?.username).toBe('alice');
    expect(copy.status?.phase).toBeUndefined();
  });

  test('an active Run is refused with a clear error and nothing is created', async () => {
    await createRun('busy');
    await start('busy');
    const refused = await krt(['retry', 'busy']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/Run "busy" is still active \(phase Running\): only a finished Run can be retried/);
    expect((await listRuns()).map((run) => run.metadata.name)).toEqual(['busy']);
  });
});

describe('krt retry of what may repeat side effects', () => {
  /** A task that is not retrySafe whose owner was lost while it ran: Interrupted at attempt 1. */
  async function interrupted(name: string): Promise<void> {
    await createRun(name);
    await start(name);
    await act(name, 'stale-recovery', { type: 'Interrupted', reason: 'OwnerLost', message: 'the owner Pod pod-1 was lost' });
  }
  const retries = async (): Promise<string[]> =>
    (await listRuns()).map((run) => run.metadata.name ?? '').filter((name) => name.includes('-retry-'));
  const WARNING =
    /run\/lost: it is a task that is not retrySafe \(spec\.retryPolicy\.retrySafe\)\. Its attempt 1 ended Interrupted \(OwnerLost: the owner Pod pod-1 was lost\): its owner was lost, so it may have run partly or wholly\. A retry runs the program again from the start, so its external side effects \(writes, calls, messages sent\) may repeat\./;

  test('without a terminal it is refused (exit 7, naming --yes) and nothing is created; --yes retries it, with the warning', async () => {
    await interrupted('lost');
    const refused = await krt(['retry', 'lost']);
    expect(refused.code).toBe(7);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(WARNING);
    expect(refused.stderr).toContain('Not retried: there is no terminal to confirm on; give --yes to retry anyway (krt retry lost --yes)');
    expect(await retries()).toEqual([]);

    const confirmed = await krt(['retry', 'lost', '--yes']);
    expect(confirmed.code).toBe(0);
    expect(confirmed.stderr).toMatch(WARNING);
    const name = /^run\/(lost-retry-[a-z0-9]{5})\n$/.exec(confirmed.stdout)?.[1] ?? '';
    expect(await retries()).toEqual([name]);
    expect((await getRun(name)).spec.parentRunRef?.name).toBe('lost');
  });

  test('on a terminal it asks [y/N]: n creates nothing (exit 7), y retries', async () => {
    await interrupted('lost');
    const ask = (): ReturnType<typeof startKrt> =>
      startKrt(['retry', 'lost'], { kubeconfig: kubeconfigs.alice, timeoutMs: CLI_TIMEOUT_MS, terminal: true });

    const declined = ask();
    await declined.waitForOutput('retry run/lost? [y/N] ', 30_000);
    expect(declined.output()).toMatch(WARNING);
    declined.write('n\r');
    expect(await declined.exited).toBe(7);
    expect(declined.output()).toContain('run/lost not retried (not confirmed)');
    expect(await retries()).toEqual([]);

    const accepted = ask();
    await accepted.waitForOutput('retry run/lost? [y/N] ', 30_000);
    accepted.write('y\r');
    expect(await accepted.exited).toBe(0);
    const name = /run\/(lost-retry-[a-z0-9]{5})\r\n/.exec(accepted.output())?.[1] ?? '';
    expect(name).not.toBe('');
    expect(await retries()).toEqual([name]);
  });

  test('a task that is not retrySafe and Failed asks too; a retrySafe task that Failed and a function Run do not', async () => {
    await createRun('once');
    await fail('once');
    const refused = await krt(['retry', 'once']);
    expect(refused.code).toBe(7);
    expect(refused.stderr).toMatch(
      /run\/once: it is a task that is not retrySafe .* Its attempt 1 ended Failed \(NonZeroExit: exit 3, exit code 3\): it may have run partly\./,
    );

    await createRun('safe', { retryPolicy: { retrySafe: true } });
    await fail('safe');
    expect(await krt(['retry', 'safe'])).toMatchObject({ code: 0, stderr: expect.not.stringContaining('may repeat') as unknown });

    await createRun('fn', FUNCTION);
    await start('fn');
    await act('fn', 'stale-recovery', { type: 'Interrupted', reason: 'OwnerLost', message: 'the owner Pod pod-1 was lost' });
    expect((await krt(['retry', 'fn'])).code).toBe(0);
  });
});

describe('krt cancel and delete', () => {
  test('cancel sets spec.cancelRequested; a finished Run is left alone', async () => {
    await createRun('c');
    expect(await krt(['cancel', 'c'])).toMatchObject({ code: 0, stdout: 'run/c cancel requested\n' });
    expect((await getRun('c')).spec.cancelRequested).toBe(true);
    // Twice is fine (it can only go false -> true).
    expect((await krt(['cancel', 'c'])).code).toBe(0);

    await createRun('done');
    await fail('done');
    const finished = await krt(['cancel', 'done']);
    expect(finished).toMatchObject({ code: 0, stderr: 'run/done already finished (Failed); nothing to cancel\n' });
    expect((await getRun('done')).spec.cancelRequested).not.toBe(true);
  });

  test('cancel --wait shows Cancelling while the cancel is carried out, then prints the final phase', async () => {
    await createRun('w');
    await start('w');
    const waiting = krt(['cancel', 'w', '--wait', '--timeout', '60s']);
    await waitFor('the cancel request', async () => ((await getRun('w')).spec.cancelRequested === true ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await act('w', 'runtimed', { type: 'CancelAccepted', message: 'stopping the task' });
    const shown = await krt(['get', 'w']);
    expect(shown.stdout).toMatch(/\nw\s+Running\s+Cancelling\s+task\s/);
    await act('w', 'runtimed', { type: 'Cancelled', message: 'stopped' });
    expect(await waiting).toMatchObject({ code: 0, stdout: 'run/w cancel requested\nrun/w Cancelled\n' });
    // On a finished Run it prints the phase it ended in.
    expect(await krt(['cancel', 'w', '--wait'])).toMatchObject({ code: 0, stdout: 'run/w Cancelled\n' });
  });

  test('cancel --wait times out with exit 5 and says the cancel stays requested', async () => {
    await createRun('slow');
    await start('slow');
    const timedOut = await krt(['cancel', 'slow', '--wait', '--timeout', '1s']);
    expect(timedOut.code).toBe(5);
    expect(timedOut.stdout).toBe('run/slow cancel requested\n');
    expect(timedOut.stderr).toMatch(
      /cancel requested, but timed out after 1000 ms waiting for Run "slow" to be finished \(phase Running\)/,
    );
    expect((await getRun('slow')).spec.cancelRequested).toBe(true);
  });

  test('delete removes the Run; deleting it again is exit 3', async () => {
    await createRun('d');
    expect(await krt(['delete', 'd'])).toMatchObject({ code: 0, stdout: 'run/d deleted\n' });
    await waitFor('Run d gone', async () => ((await listRuns()).length === 0 ? true : undefined), { timeoutMs: 30_000, intervalMs: 100 });
    const again = await krt(['delete', 'd']);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/Run "d" not found/);
  });
});

describe('krt bad inputs', () => {
  test('usage errors are exit 2 and name the problem', async () => {
    expect(await krt([])).toMatchObject({ code: 2 });
    expect((await krt(['wait', 'x'])).stderr).toMatch(/krt wait needs --for ready\|done/);
    expect((await krt(['get', 'Bad_Name'])).code).toBe(2);
    const badData = await krt(['invoke', 'fn', '--data', '{nope']);
    expect(badData.code).toBe(2);
    expect(badData.stderr).toMatch(/--data is not JSON/);
    const missingKubeconfig = await krt(['get', 'x'], { kubeconfig: join(dir, 'absent.kubeconfig') });
    expect(missingKubeconfig.code).toBe(2);
    expect(missingKubeconfig.stderr).toMatch(/cannot read the kubeconfig/);
  });

  test('invoke with a kubeconfig user that has no token says so (exit 4)', async () => {
    const noToken = await krt(['invoke', 'fn', '-n', namespace.name], { kubeconfig: kubeconfigs.noToken });
    expect(noToken.code).toBe(4);
    expect(noToken.stderr).toMatch(/the kubeconfig user "nobody" has no bearer token/);
  });

  test('invoke of a task Run, or of a function Run that is not Ready, is refused before sending', async () => {
    await createRun('task');
    expect(await krt(['invoke', 'task'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/is a task Run/) as unknown });
    await createRun('fn', FUNCTION);
    expect(await krt(['invoke', 'fn'])).toMatchObject({
      code: 5,
      stderr: expect.stringMatching(/does not accept invocations now \(phase Pending/) as unknown,
    });
  });
});

describe('krt invoke against an HTTPS server answering like the gateway', () => {
  const answer: { current: StubHandler } = { current: () => undefined };
  let keys: KeyPair;
  let gateway: HttpsStub;
  const invokePath = (uid: string | undefined): string => `/v1/namespaces/${namespace.name}/runtimes/py/functions/${uid ?? ''}:invoke`;
  beforeAll(async () => {
    keys = await selfSignedCertificate();
  });
  beforeEach(async () => {
    answer.current = () => undefined;
    gateway = await HttpsStub.start(keys, answer);
  });
  afterEach(async () => {
    await gateway.close();
  });

  async function readyFunction(name: string): Promise<Run> {
    const run = await createRun(name, FUNCTION);
    await start(name);
    return act(name, 'runtimed', {
      type: 'Registered',
      endpoint: { protocol: 'HTTPS', url: gateway.url(invokePath(run.metadata.uid)), caBundle: gateway.caBundle },
    });
  }

  test('sends the payload with the user token to the endpoint, trusting its caBundle, and prints the result', async () => {
    const run = await readyFunction('fn');
    answer.current = (request, response) => {
      json(response, request, 200, {
        invocationId: request.headers['x-kruntime-invocation-id'],
        result: { got: JSON.parse(request.body) as unknown },
        outputs: { rows: '3' },
        stdout: 'hello from the handler\n',
        attempt: 1,
      });
    };
    const ok = await krt(['invoke', 'fn', '--data', '{"x":1}', '--invocation-id', 'inv-42']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ got: { x: 1 } });
    expect(ok.stderr).toMatch(
      /^invocation inv-42 \(attempt 1\) ok\noutputs: \{"rows":"3"\}\n\[function stdout\] hello from the handler\n$/,
    );
    const [request] = gateway.requests;
    expect(request?.url).toBe(`/v1/namespaces/${namespace.name}/runtimes/py/functions/${run.metadata.uid ?? ''}:invoke`);
    expect(request?.headers.authorization).toBe(`Bearer ${cluster.user('alice').token}`);
    expect(request?.headers['x-kruntime-invocation-id']).toBe('inv-42');

    const fromStdin = await krt(['invoke', 'fn', '-f', '-'], { stdin: '[1,2,3]' });
    expect(JSON.parse(fromStdin.stdout)).toEqual({ got: [1, 2, 3] });
    const file = join(dir, 'payload.json');
    await writeFile(file, '"from a file"');
    expect(JSON.parse((await krt(['invoke', 'fn', '-f', file])).stdout)).toEqual({ got: 'from a file' });
    expect(JSON.parse((await krt(['invoke', 'fn'])).stdout)).toEqual({ got: {} });
  });

  test.each([
    ['a function error', 500, 'FunctionFailed', 'function', 1],
    ['forbidden', 403, 'Forbidden', 'platform', 4],
    ['an unknown Run UID', 404, 'RunNotFound', 'platform', 3],
    ['an invocation in flight', 429, 'InvocationInFlight', 'platform', 5],
    ['an invocation timeout', 504, 'InvocationTimeout', 'platform', 5],
  ] as const)('%s (HTTP %d, %s from the %s) is exit %d', async (_name, status, code, source, exit) => {
    await readyFunction('fn');
    answer.current = (request, response) => {
      json(response, request, status, {
        invocationId: request.headers['x-kruntime-invocation-id'],
        error: { code, message: `said ${code}`, source },
      });
    };
    const failed = await krt(['invoke', 'fn']);
    expect(failed.code).toBe(exit);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(
      new RegExp(`^error: ${code} \\(${source}, HTTP ${status}\\): said ${code} \\[invocation [0-9a-f-]{36}\\]\\n$`),
    );
  });

  test("--gateway and --gateway-ca reach the gateway at another address (a port-forward) with the Run's own path", async () => {
    const run = await createRun('fn', FUNCTION);
    await start('fn');
    // The published endpoint names the in-cluster gateway, which this machine cannot reach.
    const published = gateway.url(invokePath(run.metadata.uid)).replace(/^https:\/\/[^/]+/, 'https://runtime-gateway.kruntimes-system.svc');
    await act('fn', 'runtimed', { type: 'Registered', endpoint: { protocol: 'HTTPS', url: published } });
    answer.current = (request, response) => {
      json(response, request, 200, { invocationId: request.headers['x-kruntime-invocation-id'], result: 'pong', outputs: {}, attempt: 1 });
    };
    const caFile = join(dir, 'gateway-ca.crt');
    await writeFile(caFile, Buffer.from(gateway.caBundle, 'base64'));
    const origin = /^https:\/\/[^/]+/.exec(gateway.url(invokePath('x')))?.[0] ?? '';
    const ok = await krt(['invoke', 'fn', '--gateway', origin, '--gateway-ca', caFile]);
    expect(ok).toMatchObject({ code: 0, stdout: '"pong"\n' });
    expect(gateway.requests[0]?.url).toBe(new URL(published).pathname);
  });

  test('a gateway whose certificate does not chain to the caBundle is refused (exit 5), nothing sent', async () => {
    const other = await HttpsStub.start(await selfSignedCertificate('someone-else'), answer);
    try {
      const run = await createRun('fn', FUNCTION);
      await start('fn');
      await act('fn', 'runtimed', {
        type: 'Registered',
        endpoint: { protocol: 'HTTPS', url: gateway.url(invokePath(run.metadata.uid)), caBundle: other.caBundle },
      });
      const refused = await krt(['invoke', 'fn']);
      expect(refused.code).toBe(5);
      expect(refused.stderr).toMatch(/TLS handshake with the gateway failed.*\(the request was not sent\)/);
      expect(gateway.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });
});
