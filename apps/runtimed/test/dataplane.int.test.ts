import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChannelCredentials } from '@grpc/grpc-js';
import { AuthorizationV1Api, RbacAuthorizationV1Api, Watch } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, DEFAULTS, EVENT_REASONS, RUN_PLURAL } from '@kruntimes/api';
import type { FunctionMode, Run } from '@kruntimes/api';
import { isConditionTrue } from '@kruntimes/run-state';
import { METADATA_KEYS, durationFromMillis, healthV1, runtimedV1 } from '@kruntimes/proto';
import { pathExists } from '@kruntimes/host';
import { NamespaceAccess, failure, waitFor } from '@kruntimes/testing';
import { issueWorkloadCertificate } from '@kruntimes/workload-pki';
import { Metadata, Status, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { RuntimeEnvironment } from './runtime-pods.ts';

const FUNCTIONS = `
import os, time

def echo(event, context):
    context.set_output("invocation", context.invocation_id)
    return {"echo": event}

def sleep(event, context):
    if "marker" in event:
        open(event["marker"], "w").close()
    if "release" in event:
        # Held until the test says so (bounded by "seconds"), not for a guessed while.
        deadline = time.monotonic() + event["seconds"]
        while not os.path.exists(event["release"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        return "released" if os.path.exists(event["release"]) else "not released"
    time.sleep(event["seconds"])
    return "slept"

def fail(event, context):
    raise ValueError("the handler refuses")
`;

let env: RuntimeEnvironment;
let owner: V1Pod;
let other: V1Pod;
let scratch: string;
const channels: Channel[] = [];

/** What the gateway does: TLS to a Pod IP, trusting the internal CA, verifying `<runtime>.<namespace>.svc`. */
function gatewayClient(pod: V1Pod, port: number = DEFAULTS.runtimedGrpcPort): Client<runtimedV1.FunctionRuntimeDefinition> {
  const channel = createChannel(`${pod.status?.podIP ?? ''}:${port}`, ChannelCredentials.createSsl(Buffer.from(env.tls.caPem)), {
    'grpc.ssl_target_name_override': `rt.${env.name}.svc`,
  });
  channels.push(channel);
  return createClient(runtimedV1.FunctionRuntimeDefinition, channel);
}

/** A runtimed peer: mTLS to the peer port with a workload certificate. */
function peerClient(pod: V1Pod, certificate: { certPem: string; keyPem: string }): Client<runtimedV1.FunctionRuntimeDefinition> {
  const credentials = ChannelCredentials.createSsl(
    Buffer.from(env.tls.caPem),
    Buffer.from(certificate.keyPem),
    Buffer.from(certificate.certPem),
  );
  const channel = createChannel(`${pod.status?.podIP ?? ''}:${DEFAULTS.runtimedPeerPort}`, credentials, {
    'grpc.ssl_target_name_override': `rt.${env.name}.svc`,
  });
  channels.push(channel);
  return createClient(runtimedV1.FunctionRuntimeDefinition, channel);
}

/** Resolves once a TCP connection to the port was accepted (rejects on a refusal). */
async function listening(host: string, port: number): Promise<void> {
  const socket = connect(port, host);
  try {
    await once(socket, 'connect');
  } finally {
    socket.destroy();
  }
}

function plaintextClient(pod: V1Pod, port: number): Client<runtimedV1.FunctionRuntimeDefinition> {
  const channel = createChannel(`${pod.status?.podIP ?? ''}:${port}`);
  channels.push(channel);
  return createClient(runtimedV1.FunctionRuntimeDefinition, channel);
}

const token = (user: string) => env.cluster.user(user).token;
const bearer = (user: string) => Metadata({ [METADATA_KEYS.authorization]: `Bearer ${token(user)}` });

function request(run: Run, payload: unknown, invocationId: string = randomUUID(), timeoutMs?: number): runtimedV1.InvokeFunctionRequest {
  return {
    namespace: env.name,
    runtime: 'rt',
    runUid: run.metadata.uid ?? '',
    invocationId,
    payload: Buffer.from(JSON.stringify(payload)),
    ...(timeoutMs === undefined ? {} : { timeout: durationFromMillis(timeoutMs) }),
  };
}

async function readyFunction(name: string, handler: string, fn: Partial<FunctionMode> = {}, pod: V1Pod = owner): Promise<Run> {
  await env.createRun(name, { runtime: 'rt', source: { inline: FUNCTIONS }, mode: { function: { handler, ...fn } } });
  await env.bind(name, pod);
  return env.waitForRun(name, 'Ready', (run) => run.status?.phase === 'Ready');
}

/**
 * runtimed's log lines of one invocation. runtimed writes its log asynchronously, so a line
 * may reach the file a moment after the answer: wait (bounded) for the first, then look
 * once more a little later so that a second line, which would be a defect, is seen too.
 */
async function invocationLogs(pod: string, invocationId: string): Promise<Record<string, unknown>[]> {
  const read = async (): Promise<Record<string, unknown>[]> =>
    (await env.logs(pod, 'runtimed')).filter(
      (line) => line.invocationId === invocationId && (line.msg === 'invocation served' || line.msg === 'invocation failed'),
    );
  await waitFor(`runtimed's log line of ${invocationId} on ${pod}`, async () => ((await read()).length > 0 ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 50,
  }).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 250));
  return read();
}

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-dataplane');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-dataplane-'));
  [owner, other] = await Promise.all([env.createRuntimePod('python-0', 'python'), env.createRuntimePod('python-1', 'python')]);
  // bob may get the namespace's Runs; alice may not.
  await new NamespaceAccess(env.cluster, env.name).grantUser('bob', 'run-reader', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get'] },
  ]);
});

afterAll(async () => {
  for (const channel of channels) channel.close();
  await env.stop();
  await rm(scratch, { recursive: true, force: true });
});

test('a Ready function is invoked on its owner directly, and through another Pod with exactly one hop', async () => {
  const run = await readyFunction('echo', 'main:echo');

  const direct = await gatewayClient(owner).invokeFunction(request(run, { n: 1 }, 'direct-1'), { metadata: bearer('bob') });
  expect(JSON.parse(direct.result.toString('utf8'))).toEqual({ echo: { n: 1 } });
  expect(direct).toMatchObject({ invocationId: 'direct-1', attempt: 1, outputs: { invocation: 'direct-1' } });
  expect(await invocationLogs('python-0', 'direct-1')).toEqual([
    expect.objectContaining({ port: 'grpc', route: 'local', code: 'OK', attempt: 1 }),
  ]);

  const proxied = await gatewayClient(other).invokeFunction(request(run, { n: 2 }, 'proxied-1'), { metadata: bearer('bob') });
  expect(JSON.parse(proxied.result.toString('utf8'))).toEqual({ echo: { n: 2 } });
  expect(proxied).toMatchObject({ invocationId: 'proxied-1', attempt: 1 });
  // The receiving Pod forwarded once; the owner served it once, from the peer port.
  expect(await invocationLogs('python-1', 'proxied-1')).toEqual([
    expect.objectContaining({ port: 'grpc', route: 'forwarded', owner: 'python-0', code: 'OK' }),
  ]);
  expect(await invocationLogs('python-0', 'proxied-1')).toEqual([
    expect.objectContaining({ port: 'peer', route: 'local', fromPod: 'python-1', code: 'OK' }),
  ]);
});

test("runtimed's invocation log lines name the Runtime, the Run UID and the invocation ID: served, refused, forwarded and served from a hop", async () => {
  const run = await readyFunction('logged', 'main:echo');
  const names = (invocationId: string) => ({ namespace: env.name, runtime: 'rt', runUID: run.metadata.uid, invocationId });
  await gatewayClient(owner).invokeFunction(request(run, null, 'logged-served'), { metadata: bearer('bob') });
  await failure((o) => gatewayClient(owner).invokeFunction(request(run, null, 'logged-refused'), { ...o, metadata: bearer('alice') }));
  await gatewayClient(other).invokeFunction(request(run, null, 'logged-hop'), { metadata: bearer('bob') });
  expect(await invocationLogs('python-0', 'logged-served')).toEqual([
    expect.objectContaining({ ...names('logged-served'), msg: 'invocation served', code: 'OK' }),
  ]);
  expect(await invocationLogs('python-0', 'logged-refused')).toEqual([
    expect.objectContaining({ ...names('logged-refused'), msg: 'invocation failed', code: 'Forbidden' }),
  ]);
  expect(await invocationLogs('python-1', 'logged-hop')).toEqual([expect.objectContaining({ ...names('logged-hop'), route: 'forwarded' })]);
  expect(await invocationLogs('python-0', 'logged-hop')).toEqual([expect.objectContaining({ ...names('logged-hop'), port: 'peer' })]);
});

test('unknown UID and the UID of a deleted Run whose name was re-created: 404', async () => {
  const client = gatewayClient(owner);
  const unknown = await failure((o) =>
    client.invokeFunction(
      { ...request({ metadata: { uid: randomUUID() } } as Run, null), invocationId: 'unknown-1' },
      { ...o, metadata: bearer('bob') },
    ),
  );
  expect(unknown).toMatchObject({ code: 'RunNotFound', source: 'platform' });

  const first = await readyFunction('reused', 'main:echo');
  await env.deleteRun('reused');
  await env.waitForRunGone('reused');
  const second = await readyFunction('reused', 'main:echo');
  const stale = await failure((o) => client.invokeFunction(request(first, null), { ...o, metadata: bearer('bob') }));
  expect(stale).toMatchObject({ code: 'RunNotFound' });
  const fresh = await client.invokeFunction(request(second, 'again'), { metadata: bearer('bob') });
  expect(JSON.parse(fresh.result.toString('utf8'))).toEqual({ echo: 'again' });
});

test('callers: 401 without a token and with a garbage token, 403 without RBAC on the Run; the invocation ID comes back', async () => {
  const run = await readyFunction('guarded', 'main:echo');
  const client = gatewayClient(owner);
  const none = await failure((o) => client.invokeFunction(request(run, null, 'no-token'), o));
  expect(none).toMatchObject({ code: 'Unauthenticated', source: 'platform' });
  let trailer = Metadata();
  const garbage = await failure((o) =>
    client.invokeFunction(request(run, null, 'garbage-token'), {
      metadata: Metadata({ authorization: 'Bearer not-a-token' }),
      onTrailer: (t) => {
        trailer = t;
        o.onTrailer(t);
      },
    }),
  );
  expect(garbage).toMatchObject({ code: 'Unauthenticated' });
  expect(trailer.get(METADATA_KEYS.invocationId)).toBe('garbage-token');
  const alice = await failure((o) => client.invokeFunction(request(run, null), { ...o, metadata: bearer('alice') }));
  expect(alice).toMatchObject({ code: 'Forbidden' });
  // Through a hop too: the owner authorizes again, the receiver first.
  const aliceViaPeer = await failure((o) => gatewayClient(other).invokeFunction(request(run, null), { ...o, metadata: bearer('alice') }));
  expect(aliceViaPeer).toMatchObject({ code: 'Forbidden' });
});

test('a peer hop: the owner authorizes the caller again, though the receiving Pod allowed it from its cache', async () => {
  const name = 'reauthorized';
  await new NamespaceAccess(env.cluster, env.name).grantGetRuns('alice', name);
  const pending = await env.createRun(name, { runtime: 'rt', source: { inline: FUNCTIONS }, mode: { function: { handler: 'main:echo' } } });
  // The receiving Pod reviews alice on this Run (allowed, cached for the allow TTL) and
  // answers 503 before any hop: the owner has never reviewed her.
  const cachedAt = performance.now();
  const early = await failure((o) =>
    gatewayClient(other).invokeFunction(request(pending, null, 'before-ready'), { ...o, metadata: bearer('alice') }),
  );
  expect(early).toMatchObject({ code: 'RunNotReady' });
  await env.bind(name, owner);
  const run = await env.waitForRun(name, 'Ready', (r) => r.status?.phase === 'Ready');

  // Her right revoked, as the API server's authorizer sees it.
  await env.admin
    .makeApiClient(RbacAuthorizationV1Api)
    .deleteNamespacedRoleBinding({ namespace: env.name, name: `get-runs-alice-${name}` });
  const reviews = env.admin.makeApiClient(AuthorizationV1Api);
  const resourceAttributes = { namespace: env.name, verb: 'get', group: API_GROUP, resource: RUN_PLURAL, name };
  await waitFor(
    'alice refused by the API server',
    async () =>
      (await reviews.createSubjectAccessReview({ body: { spec: { user: 'alice', resourceAttributes } } })).status?.allowed === false
        ? true
        : undefined,
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  const refused = await failure((o) =>
    gatewayClient(other).invokeFunction(request(run, null, 'after-revoke'), { ...o, metadata: bearer('alice') }),
  );
  expect(refused).toMatchObject({ code: 'Forbidden' });
  // Still within the receiver's allow TTL: it let her through from its cache and forwarded;
  // the owner, reviewing her itself, refused.
  expect(performance.now() - cachedAt).toBeLessThan(DEFAULTS.authzCacheTtlSeconds * 1000);
  expect(await invocationLogs('python-1', 'after-revoke')).toEqual([
    expect.objectContaining({ port: 'grpc', route: 'forwarded', owner: 'python-0', code: 'Forbidden' }),
  ]);
  expect(await invocationLogs('python-0', 'after-revoke')).toEqual([
    expect.objectContaining({ port: 'peer', fromPod: 'python-1', code: 'Forbidden' }),
  ]);
});

test('overlapping invocations: 429; a handler past invocationTimeoutSeconds: 504; a raising handler: 500 from the function', async () => {
  const sleeper = await readyFunction('sleeper', 'main:sleep', { invocationTimeoutSeconds: 60 });
  const client = gatewayClient(owner);
  const marker = join(scratch, 'slow-1.started');
  const release = join(scratch, 'slow-1.release');
  // In flight until released: the overlapping call is answered whatever the machine's load.
  const first = client.invokeFunction(request(sleeper, { seconds: 50, marker, release }, 'slow-1'), { metadata: bearer('bob') });
  await waitFor('the first invocation to be in flight', async () => ((await pathExists(marker)) ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  const second = await failure((o) =>
    gatewayClient(other).invokeFunction(request(sleeper, { seconds: 0 }, 'slow-2'), { ...o, metadata: bearer('bob') }),
  );
  expect(second).toMatchObject({ code: 'InvocationInFlight', source: 'platform' });
  await writeFile(release, '');
  expect(JSON.parse((await first).result.toString('utf8'))).toBe('released');

  const short = await readyFunction('short', 'main:sleep', { invocationTimeoutSeconds: 1 });
  const timedOut = await failure((o) =>
    client.invokeFunction(request(short, { seconds: 30 }, 'too-slow'), { ...o, metadata: bearer('bob') }),
  );
  expect(timedOut).toMatchObject({ code: 'InvocationTimeout', source: 'platform' });

  const failing = await readyFunction('failing', 'main:fail');
  const failed = await failure((o) => client.invokeFunction(request(failing, null), { ...o, metadata: bearer('bob') }));
  expect(failed).toMatchObject({ code: 'FunctionFailed', source: 'function' });
  expect(failed.message).toContain('the handler refuses');
  // The owner's answer crosses the hop unchanged.
  const failedViaPeer = await failure((o) =>
    gatewayClient(other).invokeFunction(request(failing, null), { ...o, metadata: bearer('bob') }),
  );
  expect(failedViaPeer).toMatchObject({ code: 'FunctionFailed', source: 'function' });
});

/** What an invocation must never change on its Run, and the Events recorded on it. */
async function runRecord(name: string): Promise<{ phase?: string; attempt?: number; resourceVersion?: string; events: string[] }> {
  const run = await env.getRun(name);
  const events = await env.core.listNamespacedEvent({ namespace: env.name, fieldSelector: `involvedObject.uid=${run.metadata.uid ?? ''}` });
  return {
    ...(run.status?.phase === undefined ? {} : { phase: run.status.phase }),
    ...(run.status?.attempt === undefined ? {} : { attempt: run.status.attempt }),
    ...(run.metadata.resourceVersion === undefined ? {} : { resourceVersion: run.metadata.resourceVersion }),
    events: events.items.map((event) => `${event.reason ?? ''} ${String(event.count ?? 0)}`).sort(),
  };
}

test("invocation errors (429, 504, 500, directly and through a hop) leave the Run's phase, attempt and resourceVersion as they were, and record no Event", async () => {
  const runs = {
    busy: await readyFunction('errors-busy', 'main:sleep', { invocationTimeoutSeconds: 60 }),
    slow: await readyFunction('errors-slow', 'main:sleep', { invocationTimeoutSeconds: 1 }),
    failing: await readyFunction('errors-failing', 'main:fail'),
  };
  const before = { busy: await runRecord('errors-busy'), slow: await runRecord('errors-slow'), failing: await runRecord('errors-failing') };
  for (const record of Object.values(before)) expect(record).toMatchObject({ phase: 'Ready', attempt: 1 });

  const marker = join(scratch, 'errors-busy.started');
  const release = join(scratch, 'errors-busy.release');
  const inFlight = gatewayClient(owner).invokeFunction(request(runs.busy, { seconds: 50, marker, release }, 'errors-held'), {
    metadata: bearer('bob'),
  });
  await waitFor('the held invocation in flight', async () => ((await pathExists(marker)) ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 20,
  });
  const answers: [string, string][] = [];
  for (const [via, pod] of [
    ['owner', owner],
    ['peer', other],
  ] as const) {
    for (const [name, run, payload] of [
      ['busy', runs.busy, { seconds: 0 }],
      ['slow', runs.slow, { seconds: 30 }],
      ['failing', runs.failing, null],
    ] as const) {
      const id = `errors-${name}-${via}`;
      const refused = await failure((o) => gatewayClient(pod).invokeFunction(request(run, payload, id), { ...o, metadata: bearer('bob') }));
      answers.push([id, refused.code ?? 'none']);
      // Its log line is written after the answer: whatever the invocation did is done by then.
      expect((await invocationLogs(pod === owner ? 'python-0' : 'python-1', id)).length).toBe(1);
    }
  }
  await writeFile(release, '');
  expect(JSON.parse((await inFlight).result.toString('utf8'))).toBe('released');
  expect(answers).toEqual([
    ['errors-busy-owner', 'InvocationInFlight'],
    ['errors-slow-owner', 'InvocationTimeout'],
    ['errors-failing-owner', 'FunctionFailed'],
    ['errors-busy-peer', 'InvocationInFlight'],
    ['errors-slow-peer', 'InvocationTimeout'],
    ['errors-failing-peer', 'FunctionFailed'],
  ]);
  expect({
    busy: await runRecord('errors-busy'),
    slow: await runRecord('errors-slow'),
    failing: await runRecord('errors-failing'),
  }).toEqual(before);
});

test('a Run that is not Ready yet: 503 RunNotReady', async () => {
  const pending = await env.createRun('not-yet', {
    runtime: 'rt',
    source: { inline: FUNCTIONS },
    mode: { function: { handler: 'main:echo' } },
  });
  const refused = await failure((o) => gatewayClient(owner).invokeFunction(request(pending, null), { ...o, metadata: bearer('bob') }));
  expect(refused).toMatchObject({ code: 'RunNotReady' });
});

/**
 * Resolves with the Run the moment a watch of the API server shows it Ready, as a client
 * that waits for Ready by a watch sees it; runtimed's own watch may deliver it a moment later.
 */
async function watchUntilReady(name: string, timeoutMs = 60_000): Promise<Run> {
  let settle: (run: Run | Error) => void = () => undefined;
  const outcome = new Promise<Run | Error>((resolve) => {
    settle = resolve;
  });
  const timer = setTimeout(() => {
    settle(new Error(`Run ${name} not Ready within ${String(timeoutMs)} ms`));
  }, timeoutMs);
  const controller = await new Watch(env.admin).watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${env.name}/${RUN_PLURAL}`,
    { fieldSelector: `metadata.name=${name}` },
    (_type, object: Run) => {
      if (object.status?.phase === 'Ready' && isConditionTrue(object.status.conditions, 'Ready')) settle(object);
    },
    (error: unknown) => {
      settle(error instanceof Error ? error : new Error(`the watch of Run ${name} ended`));
    },
  );
  try {
    const result = await outcome;
    if (result instanceof Error) throw result;
    return result;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

test('an invoke sent the moment a watch shows the Run Ready is served, on the owner and through a peer, though their caches may lag', async () => {
  for (const [index, via] of [owner, other, owner, other].entries()) {
    const name = `just-ready-${String(index)}`;
    await env.createRun(name, { runtime: 'rt', source: { inline: FUNCTIONS }, mode: { function: { handler: 'main:echo' } } });
    const ready = watchUntilReady(name);
    await env.bind(name, owner);
    const run = await ready;
    const answer = await gatewayClient(via).invokeFunction(request(run, { n: index }), { metadata: bearer('bob') });
    expect(JSON.parse(answer.result.toString('utf8'))).toEqual({ echo: { n: index } });
    await env.deleteRun(name);
  }
});

test('the owner Pod stops answering: 503 OwnerUnavailable from its peer, an OwnerUnreachable Event on the Run at most once per 30 s, and no write of the Run', async () => {
  const run = await readyFunction('stranded', 'main:echo', {}, other);
  env.node.freezePod(env.name, 'python-1');
  try {
    await waitFor(
      'python-1 not Ready',
      async () => {
        const pod = await env.core.readNamespacedPod({ namespace: env.name, name: 'python-1' });
        return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'False') === true ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const client = gatewayClient(owner);
    const refused = await failure((o) => client.invokeFunction(request(run, null), { ...o, metadata: bearer('bob') }));
    expect(refused).toMatchObject({ code: 'OwnerUnavailable' });
    const events = await waitFor(
      'the OwnerUnreachable Event',
      async () => {
        const list = await env.core.listNamespacedEvent({
          namespace: env.name,
          fieldSelector: `involvedObject.uid=${run.metadata.uid ?? ''}`,
        });
        const found = list.items.filter((e) => e.reason === EVENT_REASONS.ownerUnreachable);
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(events[0]).toMatchObject({
      type: 'Warning',
      source: { component: 'runtimed' },
      involvedObject: { kind: 'Run', name: 'stranded' },
    });
    const firstRecordedAt = Date.now();
    const recorded = async (): Promise<number> =>
      (await env.logs('python-0', 'runtimed')).filter(
        (line) => line.msg === 'recorded an OwnerUnreachable Event' && line.runUID === run.metadata.uid,
      ).length;
    // More refusals within 30 s record no second Event (nor start writing one), and no
    // refusal writes the Run.
    const { resourceVersion } = (await env.getRun('stranded')).metadata;
    for (let i = 0; i < 5; i += 1) await failure((o) => client.invokeFunction(request(run, null), { ...o, metadata: bearer('bob') }));
    const ownerUnreachable = async (): Promise<number> =>
      (
        await env.core.listNamespacedEvent({ namespace: env.name, fieldSelector: `involvedObject.uid=${run.metadata.uid ?? ''}` })
      ).items.filter((e) => e.reason === EVENT_REASONS.ownerUnreachable).length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([await ownerUnreachable(), await recorded()]).toEqual([1, 1]);
    expect((await env.getRun('stranded')).metadata.resourceVersion).toBe(resourceVersion);
    // Once the 30 s since the first have passed, the next refusal records the second.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstRecordedAt + 30_000 - Date.now())));
    await failure((o) => client.invokeFunction(request(run, null), { ...o, metadata: bearer('bob') }));
    await waitFor('the second OwnerUnreachable Event', async () => ((await ownerUnreachable()) === 2 ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect((await env.getRun('stranded')).metadata.resourceVersion).toBe(resourceVersion);
  } finally {
    env.node.thawPod(env.name, 'python-1');
  }
});

test('the owner Pod is lost and its processes killed: 503 OwnerUnavailable from a peer, never a second owner', async () => {
  const doomed = await env.createRuntimePod('python-2', 'python');
  const run = await readyFunction('orphaned', 'main:echo', {}, doomed);
  const client = gatewayClient(owner);
  expect((await client.invokeFunction(request(run, 'alive'), { metadata: bearer('bob') })).attempt).toBe(1);
  // The Pod object goes at once; its processes linger like a lost node's, then are killed.
  const uid = await env.node.forceDeletePod(env.name, 'python-2');
  await env.node.killZombie(uid);
  const refused = await failure((o) => client.invokeFunction(request(run, null, 'after-loss'), { ...o, metadata: bearer('bob') }));
  expect(refused).toMatchObject({ code: 'OwnerUnavailable', source: 'platform' });
  expect(await invocationLogs('python-0', 'after-loss')).toEqual([expect.objectContaining({ route: 'refused', code: 'OwnerUnavailable' })]);
});

test("peer port: a wrong expected attempt is EpochMismatch; another Runtime's certificate is refused; a hop on the gateway port is refused", async () => {
  const run = await readyFunction('fenced', 'main:echo');
  const ours = await issueWorkloadCertificate(env.tls.ca, { namespace: env.name, runtime: 'rt' });
  const theirs = await issueWorkloadCertificate(env.tls.ca, { namespace: env.name, runtime: 'other' });
  const hop = (expectedAttempt: number) => ({
    ...request(run, null),
    peerHop: { expectedAttempt, expectedPodUid: owner.metadata?.uid ?? '', fromPod: 'test' },
  });

  const served = await peerClient(owner, ours).invokeFunction(hop(1), { metadata: bearer('bob') });
  expect(served.attempt).toBe(1);
  const mismatch = await failure((o) => peerClient(owner, ours).invokeFunction(hop(2), { ...o, metadata: bearer('bob') }));
  expect(mismatch).toMatchObject({ code: 'EpochMismatch' });
  const foreign = await failure((o) => peerClient(owner, theirs).invokeFunction(hop(1), { ...o, metadata: bearer('bob') }));
  expect(foreign).toMatchObject({ code: 'Forbidden' });
  const hopOnGatewayPort = await failure((o) => gatewayClient(owner).invokeFunction(hop(1), { ...o, metadata: bearer('bob') }));
  expect(hopOnGatewayPort).toMatchObject({ code: 'InvalidRequest' });
  const directOnPeerPort = await failure((o) =>
    peerClient(owner, ours).invokeFunction(request(run, null), { ...o, metadata: bearer('bob') }),
  );
  expect(directOnPeerPort).toMatchObject({ code: 'InvalidRequest' });
});

test('no plaintext: the gRPC and peer ports refuse it; the health port is plaintext and refuses credentials; metrics refuse an Authorization header', async () => {
  const run = await readyFunction('plain', 'main:echo');
  for (const port of [DEFAULTS.runtimedGrpcPort, DEFAULTS.runtimedPeerPort]) {
    const refused = await failure((o) =>
      plaintextClient(owner, port).invokeFunction(request(run, null), {
        ...o,
        metadata: bearer('bob'),
        signal: AbortSignal.timeout(10_000),
      }),
    );
    // The port listens (so the refusal is not a connection refused) and ends the plaintext
    // call before any handler runs: no kruntimes error code, UNAVAILABLE.
    await listening(owner.status?.podIP ?? '', port);
    expect(refused).toMatchObject({ status: Status.UNAVAILABLE, code: undefined });
  }
  const healthChannel = createChannel(`${owner.status?.podIP ?? ''}:${DEFAULTS.runtimedHealthPort}`);
  channels.push(healthChannel);
  const health = createClient(healthV1.HealthDefinition, healthChannel);
  expect(await health.check({ service: '' })).toEqual({ status: healthV1.HealthCheckResponse_ServingStatus.SERVING });
  const withToken = await failure((o) => health.check({ service: '' }, { ...o, metadata: bearer('bob') }));
  expect(withToken).toMatchObject({ code: 'InvalidRequest' });

  // Two hops from bob to the owner: the second is answered from the owner's authz cache.
  for (const id of ['metrics-1', 'metrics-2'])
    await gatewayClient(other).invokeFunction(request(run, null, id), { metadata: bearer('bob') });
  const metrics = `http://${owner.status?.podIP ?? ''}:9464/metrics`;
  expect((await fetch(metrics, { headers: { authorization: `Bearer ${token('bob')}` } })).status).toBe(400);
  const text = await (await fetch(metrics)).text();
  expect(text).toMatch(/kruntimes_authz_reviews_total\{outcome="allowed"\} [1-9]/);
  expect(text).toMatch(/kruntimes_authz_cache_requests_total\{result="hit"\} [1-9]/);
  expect(text).toMatch(/kruntimes_runtimed_invocations_total\{port="peer",route="local",code="OK"\} [1-9]/);
  // The owner's per-function series of this Run (the peer hops were served there).
  const name = run.metadata.name ?? '';
  expect(text).toMatch(
    new RegExp(`^kruntimes_function_invocations_total\\{namespace="[^"]+",runtime="[^"]+",run="${name}",code="OK"\\} [1-9]`, 'm'),
  );
  expect(text).toMatch(new RegExp(`^kruntimes_function_invocation_duration_seconds_count\\{[^}]*run="${name}"\\} [1-9]`, 'm'));
  expect(text).toMatch(new RegExp(`^kruntimes_function_inflight\\{[^}]*run="${name}"\\} 0$`, 'm'));
  expect(text).toMatch(new RegExp(`^kruntimes_function_idle_seconds\\{[^}]*run="${name}"\\} [0-9.e+-]+$`, 'm'));
});
