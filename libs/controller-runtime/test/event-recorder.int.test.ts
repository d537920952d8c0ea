import { CoreV1Api } from '@kubernetes/client-node';
import type { CoreV1Event } from '@kubernetes/client-node';
import { Cluster, NamespaceAccess } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { EVENT_RECORDER_RULES, EventRecorder } from '../src/index.ts';
import type { EventOccurrence, InvolvedObject } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const core = cluster.kubeConfig().makeApiClient(CoreV1Api);

let namespace: TestNamespace;
let regarding: InvolvedObject;
let errors: object[];
const logger = { error: (object: object) => errors.push(object), debug: () => undefined };

beforeEach(async () => {
  errors = [];
  namespace = await cluster.createNamespace({ prefix: 'event-recorder' });
  const created = await core.createNamespacedConfigMap({ namespace: namespace.name, body: { metadata: { name: 'subject' } } });
  regarding = { apiVersion: 'v1', kind: 'ConfigMap', name: 'subject', namespace: namespace.name, uid: created.metadata?.uid ?? '' };
});

afterEach(async () => {
  await namespace.delete();
});

async function eventsOfSubject(): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: namespace.name, fieldSelector: `involvedObject.uid=${regarding.uid}` });
  return list.items.sort((a, b) => (a.message ?? '').localeCompare(b.message ?? ''));
}

test('with only its rules, repeats are one Event whose count and lastTimestamp move; another message is another Event', async () => {
  const kubeConfig = await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig('recorder', EVENT_RECORDER_RULES);
  let nowMs = Date.parse('2026-01-01T00:00:00Z');
  const recorder = EventRecorder.forKubeConfig(kubeConfig, { component: 'test-component', instance: 'pod-1', logger, now: () => nowMs });
  const warning: EventOccurrence = { regarding, type: 'Warning', reason: 'SubjectRefused', message: 'a refusal' };

  expect(await Promise.all([recorder.event(warning), recorder.event(warning)])).toEqual([true, true]);
  nowMs += 5_000;
  expect(await recorder.event(warning)).toBe(true);
  expect(await recorder.event({ ...warning, type: 'Normal', reason: 'SubjectAccepted', message: 'an acceptance' })).toBe(true);

  const [refused, accepted] = await eventsOfSubject(); // by message
  expect(refused).toMatchObject({
    involvedObject: regarding,
    type: 'Warning',
    reason: 'SubjectRefused',
    message: 'a refusal',
    count: 3,
    source: { component: 'test-component' },
    reportingComponent: 'test-component',
    reportingInstance: 'pod-1',
    firstTimestamp: new Date('2026-01-01T00:00:00Z'),
    lastTimestamp: new Date('2026-01-01T00:00:05Z'),
  });
  expect(accepted).toMatchObject({ reason: 'SubjectAccepted', type: 'Normal', count: 1 });
  expect(await eventsOfSubject()).toHaveLength(2);
  expect(errors).toEqual([]);
});

test('an Event deleted meanwhile (the event TTL): the repeat is a new Event', async () => {
  const recorder = EventRecorder.forKubeConfig(cluster.kubeConfig(), { component: 'test-component', logger });
  const occurrence: EventOccurrence = { regarding, type: 'Normal', reason: 'SubjectSeen', message: 'seen' };
  await recorder.event(occurrence);
  const [first] = await eventsOfSubject();
  await core.deleteNamespacedEvent({ namespace: namespace.name, name: first?.metadata.name ?? '' });
  expect(await recorder.event(occurrence)).toBe(true);
  const after = await eventsOfSubject();
  expect(after.map((event) => [event.count, event.metadata.name === first?.metadata.name])).toEqual([[1, false]]);
  expect(errors).toEqual([]);
});

test('a write the API server refuses is logged and resolves false, never thrown', async () => {
  const kubeConfig = await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig('no-events', []);
  const recorder = EventRecorder.forKubeConfig(kubeConfig, { component: 'test-component', logger });
  expect(await recorder.event({ regarding, type: 'Warning', reason: 'SubjectRefused', message: 'refused' })).toBe(false);
  expect(errors).toHaveLength(1);
  expect(await eventsOfSubject()).toEqual([]);
});
