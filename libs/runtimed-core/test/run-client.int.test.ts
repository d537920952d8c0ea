// runtimed's fenced Run writes against the real API server: every report of an attempt
// is numbered, a restarted runtimed goes on from the live number, and an older report
// is refused by the transition rules and by the CRD alike.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, BOUNDS, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { TransitionRefusedError, transition } from '@kruntimes/run-state';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import type { Epoch } from '../src/epoch.ts';
import { RunClient } from '../src/run-client.ts';

const cluster = Cluster.fromEnvironment();
const objects = cluster.kubeConfig().makeApiClient(CustomObjectsApi);
const POD_UID = '00000000-0000-4000-8000-00000000000a';

let namespace: TestNamespace;
beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'run-client' });
});
afterEach(async () => {
  await namespace.delete();
});

const target = () => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural: RUN_PLURAL });

/** A task Run bound to POD_UID by the scheduler, as this Pod's runtimed would find it. */
async function boundTask(name: string): Promise<Epoch> {
  const created = (await objects.createNamespacedCustomObject({
    ...target(),
    body: {
      apiVersion: API_GROUP_VERSION,
      kind: 'Run',
      metadata: { name },
      spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
    },
  })) as Run;
  const bound = transition({
    run: created,
    event: { type: 'Bind', pod: 'pod-a', podUID: POD_UID },
    writer: 'scheduler',
    now: new Date().toISOString(),
  });
  if (!bound.ok) throw bound.error;
  await objects.replaceNamespacedCustomObjectStatus({ ...target(), name, body: { ...created, status: bound.status } });
  return { namespace: namespace.name, name, uid: created.metadata.uid ?? '', attempt: 1, podUID: POD_UID };
}

test('each report of an attempt gets the next number, and a restarted runtimed goes on from the live one', async () => {
  const epoch = await boundTask('numbered');
  const claimed = await new RunClient(cluster.kubeConfig()).transition(epoch, { type: 'Claim' });
  expect(claimed.status?.reportSequence).toBe(1);
  // A new process (runtimed restarted in the same Pod) knows nothing of report 1.
  const restarted = new RunClient(cluster.kubeConfig());
  const cancelling = (await objects.patchNamespacedCustomObject({
    ...target(),
    name: 'numbered',
    body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
  })) as Run;
  expect(cancelling.spec.cancelRequested).toBe(true);
  const accepted = await restarted.transition(epoch, { type: 'CancelAccepted', message: 'stopping the task' });
  expect(accepted.status).toMatchObject({ reportSequence: 2, reason: 'Cancelling' });
});

test('an older report of the attempt is refused: by the transition rules, and by the API server when written anyway', async () => {
  const epoch = await boundTask('ordered');
  const client = new RunClient(cluster.kubeConfig());
  await client.transition(epoch, { type: 'Claim' });
  const succeeded = await client.transition(epoch, { type: 'Succeeded', outputs: { rows: '3' } });
  expect(succeeded.status).toMatchObject({ phase: 'Succeeded', reportSequence: 2 });

  // Report 1 of this attempt, made before the success but delivered after it.
  const late = transition({
    run: succeeded,
    event: { type: 'Failed', reason: 'NonZeroExit', message: 'exit 1', exitCode: 1 },
    writer: 'runtimed',
    now: new Date().toISOString(),
    sequence: 1,
  });
  expect(late.ok).toBe(false);
  expect(late.ok ? undefined : late.error).toBeInstanceOf(TransitionRefusedError);
  expect(late.ok ? undefined : late.error.refusal).toBe('staleReport');

  // Written past the rules, the CRD refuses it too.
  const rejected = await objects
    .replaceNamespacedCustomObjectStatus({
      ...target(),
      name: 'ordered',
      body: { ...succeeded, status: { ...succeeded.status, reportSequence: 1 } },
    })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(String((rejected as { body?: unknown } | undefined)?.body ?? rejected)).toContain(
    'status.reportSequence may not decrease within an attempt',
  );
  const live = (await objects.getNamespacedCustomObject({ ...target(), name: 'ordered' })) as Run;
  expect(live.status).toMatchObject({ phase: 'Succeeded', reportSequence: 2, outputs: { rows: '3' } });
});

test('status.endpoint.caBundle: 16 KiB of PEM is accepted by the API server, one byte more is refused', async () => {
  await boundTask('bundle');
  const bound = (await objects.getNamespacedCustomObject({ ...target(), name: 'bundle' })) as Run;
  const withBundle = (bytes: number): Run => ({
    ...bound,
    status: {
      ...bound.status,
      endpoint: { protocol: 'HTTPS', url: 'https://gateway.example', caBundle: Buffer.alloc(bytes, 'A').toString('base64') },
    },
  });
  const write = (run: Run): Promise<unknown> =>
    objects.replaceNamespacedCustomObjectStatus({ ...target(), name: 'bundle', body: run }).then(
      () => undefined,
      (error: unknown) => String((error as { body?: unknown }).body ?? error),
    );

  expect(await write(withBundle(BOUNDS.caBundleBytes + 1))).toContain(`caBundle holds at most ${String(BOUNDS.caBundleBytes)} bytes`);
  expect(await write(withBundle(BOUNDS.caBundleBytes + 2))).toContain(`caBundle holds at most ${String(BOUNDS.caBundleBytes)} bytes`);
  const live = (await objects.getNamespacedCustomObject({ ...target(), name: 'bundle' })) as Run;
  expect(live.status?.endpoint).toBeUndefined();
  expect(await write(withBundle(BOUNDS.caBundleBytes))).toBeUndefined();
  const accepted = (await objects.getNamespacedCustomObject({ ...target(), name: 'bundle' })) as Run;
  expect(Buffer.from(accepted.status?.endpoint?.caBundle ?? '', 'base64')).toHaveLength(BOUNDS.caBundleBytes);
});
