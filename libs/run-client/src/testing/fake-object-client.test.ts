import type { RunSchedule } from '@kruntimes/api';
import { FakeObjectClient } from './fake-object-client.ts';

function schedule(resourceVersion = '5', labels: Record<string, string> = {}): RunSchedule {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunSchedule',
    metadata: { name: 's', namespace: 'ns', uid: 'uid-s', resourceVersion, labels },
    spec: { schedule: '* * * * *', runTemplate: { spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} } } } },
    status: { active: 1 },
  };
}

type Write = (client: FakeObjectClient<RunSchedule>) => Promise<{ ok: boolean; reason?: string }>;

test.each<[string, Write, string]>([
  ['a status replace on the live version', (c) => c.replaceStatus(schedule(), { active: 2 }), 'ok'],
  ['a status replace on an older version', (c) => c.replaceStatus(schedule('4'), { active: 2 }), 'Conflict'],
  ['a replace on an older version', (c) => c.replace(schedule('4')), 'Conflict'],
  ['a merge patch fenced on an older version', (c) => c.mergePatch('ns', 's', { metadata: { resourceVersion: '4' } }), 'Conflict'],
  [
    'a status replace of an object not held',
    (c) => c.replaceStatus({ ...schedule(), metadata: { name: 'other', namespace: 'ns' } }, {}),
    'NotFound',
  ],
  ['a create of a name taken', (c) => c.create('ns', schedule()), 'AlreadyExists'],
  ['a delete preconditioned on another UID', (c) => c.delete('ns', 's', { preconditions: { uid: 'uid-other' } }), 'Conflict'],
  ['a delete of an object not held', (c) => c.delete('ns', 'other'), 'NotFound'],
  [
    'a delete preconditioned on the live version',
    (c) => c.delete('ns', 's', { preconditions: { uid: 'uid-s', resourceVersion: '5' } }),
    'ok',
  ],
])('%s: %s', async (_name, write, outcome) => {
  const client = new FakeObjectClient<RunSchedule>([schedule()]);

  const result = await write(client);

  expect(result.ok ? 'ok' : result.reason).toBe(outcome);
  expect(client.writes.map((recorded) => recorded.outcome)).toEqual([outcome]);
});

test('a scripted refusal answers whatever the object is', async () => {
  const client = new FakeObjectClient<RunSchedule>([schedule()]);
  client.refuse('replaceStatus', 'ns/s', 'NotFound');

  await expect(client.replaceStatus(schedule(), { active: 2 })).resolves.toMatchObject({ ok: false, reason: 'NotFound' });
  expect(client.live('ns', 's')?.status).toEqual({ active: 1 });
});

test('an accepted write moves the resourceVersion; replace keeps the status; a merge patch’s null removes', async () => {
  const labelled = schedule('5', { a: '1', b: '2' });
  const client = new FakeObjectClient<RunSchedule>([labelled]);

  const replaced = await client.replace({ ...labelled, spec: { ...labelled.spec, suspend: true }, status: { active: 9 } });
  if (!replaced.ok) throw new Error(replaced.reason);
  await client.mergePatch('ns', 's', { metadata: { labels: { a: null } } });

  const live = client.live('ns', 's');
  expect(replaced.object.metadata.resourceVersion).not.toBe('5');
  expect(live?.spec.suspend).toBe(true);
  expect(live?.status).toEqual({ active: 1 });
  expect(live?.metadata.labels).toEqual({ b: '2' });
});
