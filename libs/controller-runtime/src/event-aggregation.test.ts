import { EVENT_REASONS } from '@kruntimes/api';
import { decideEventWrite, eventKey, isEventReason } from './event-aggregation.ts';
import type { EventOccurrence, EventWrite, SeenEvent } from './event-aggregation.ts';

const WINDOW = 60_000;
const seen: SeenEvent = { name: 'run.abc', count: 3, lastMs: 100_000 };

test.each<[string, SeenEvent | undefined, number, EventWrite]>([
  ['never seen: a new Event', undefined, 100_000, { action: 'create' }],
  ['a repeat at once: counted into its Event', seen, 100_000, { action: 'patch', name: 'run.abc', count: 4 }],
  ['a repeat just inside the window', seen, 100_000 + WINDOW - 1, { action: 'patch', name: 'run.abc', count: 4 }],
  ['a repeat at the end of the window: a new Event', seen, 100_000 + WINDOW, { action: 'create' }],
  ['a repeat long after: a new Event', seen, 100_000 + 10 * WINDOW, { action: 'create' }],
])('%s', (_name, previous, nowMs, expected) => {
  expect(decideEventWrite(previous, nowMs, WINDOW)).toEqual(expected);
});

const base: EventOccurrence = {
  regarding: { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', name: 'a', namespace: 'ns', uid: 'u1' },
  type: 'Warning',
  reason: 'Forbidden',
  message: 'no',
};

test.each<[string, EventOccurrence, boolean]>([
  ['the same occurrence', structuredClone(base), true],
  ['another message', { ...base, message: 'yes' }, false],
  ['another reason', { ...base, reason: 'NamespaceBlocked' }, false],
  ['another type', { ...base, type: 'Normal' }, false],
  ['another object of the same name (UID)', { ...base, regarding: { ...base.regarding, uid: 'u2' } }, false],
  ['the same name in another namespace', { ...base, regarding: { ...base.regarding, namespace: 'other' } }, false],
  ['another kind', { ...base, regarding: { ...base.regarding, kind: 'Runtime' } }, false],
])('eventKey: %s is a repeat: %s', (_name, other, repeat) => {
  expect(eventKey(other) === eventKey(base)).toBe(repeat);
});

test.each<[string, boolean]>([
  ['ScaledUp', true],
  ['OwnerUnreachable', true],
  ['Response404', true],
  ['scaledUp', false],
  ['Scaled up', false],
  ['Scaled-Up', false],
  ['', false],
  [`A${'a'.repeat(128)}`, false],
])('isEventReason(%j) is %s', (reason, expected) => {
  expect(isEventReason(reason)).toBe(expected);
});

test.each(Object.entries(EVENT_REASONS))('the shared reason %s is UpperCamelCase (%s)', (_name, reason) => {
  expect(isEventReason(reason)).toBe(true);
});
