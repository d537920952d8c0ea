import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { EventOccurrence } from './event-aggregation.ts';
import { EventRecorder } from './event-recorder.ts';
import type { EventRecorderOptions, EventRepeatPatch, EventWriter } from './event-recorder.ts';

/** A write the fake API server answered: `create <reason> <message>` or `patch <name> count=<n>`. */
type Written = string;

/** A core/v1 Events API in memory; `refuse` makes the next writes fail with that HTTP code. */
class FakeEvents implements EventWriter {
  readonly written: Written[] = [];
  readonly events = new Map<string, CoreV1Event>();
  refuse: number[] = [];
  #next = 0;

  createNamespacedEvent(request: { namespace: string; body: CoreV1Event }): Promise<CoreV1Event> {
    this.#refused();
    this.#next += 1;
    const name = `${request.body.metadata.generateName ?? ''}${String(this.#next)}`;
    const event = structuredClone(request.body);
    event.metadata.name = name;
    this.events.set(name, event);
    this.written.push(`create ${request.body.reason ?? ''} ${request.body.message ?? ''}`);
    return Promise.resolve(event);
  }

  patchNamespacedEvent(request: { name: string; namespace: string; body: EventRepeatPatch }): Promise<CoreV1Event> {
    this.#refused();
    const event = this.events.get(request.name);
    if (event === undefined) throw new ApiException<unknown>(404, 'NotFound', {}, {});
    const patched = structuredClone(event);
    patched.count = request.body.count;
    patched.lastTimestamp = request.body.lastTimestamp;
    this.events.set(request.name, patched);
    this.written.push(`patch ${request.name} count=${String(request.body.count)}`);
    return Promise.resolve(patched);
  }

  #refused(): void {
    const code = this.refuse.shift();
    if (code !== undefined) throw new ApiException<unknown>(code, `HTTP ${String(code)}`, {}, {});
  }
}

const run = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', name: 'a', namespace: 'ns', uid: 'u1' };
const forbidden: EventOccurrence = { regarding: run, type: 'Warning', reason: 'Forbidden', message: 'no' };
const blocked: EventOccurrence = { ...forbidden, reason: 'NamespaceBlocked' };
const other: EventOccurrence = { ...forbidden, regarding: { ...run, name: 'b', uid: 'u2' } };

/** One step: at this time, record these occurrences at once (a burst), or make the server refuse, or expire an Event. */
type Step = { atMs: number; record: EventOccurrence[] } | { refuse: number[] } | { expire: string };

interface Case {
  name: string;
  options?: Partial<EventRecorderOptions>;
  steps: Step[];
  written: Written[];
  /** What each `record` resolved to, in order. */
  results: boolean[];
  logged: number;
}

const cases: Case[] = [
  {
    name: 'a burst of one occurrence is one Event whose count moves',
    steps: [{ atMs: 0, record: [forbidden, forbidden, forbidden] }],
    written: ['create Forbidden no', 'patch a.1 count=2', 'patch a.1 count=3'],
    results: [true, true, true],
    logged: 0,
  },
  {
    name: 'another reason, another message or another object is another Event',
    steps: [{ atMs: 0, record: [forbidden, blocked, { ...forbidden, message: 'still no' }, other] }],
    written: ['create Forbidden no', 'create NamespaceBlocked no', 'create Forbidden still no', 'create Forbidden no'],
    results: [true, true, true, true],
    logged: 0,
  },
  {
    name: 'a repeat within the window counts; after it, a new Event',
    options: { windowMs: 1_000 },
    steps: [
      { atMs: 0, record: [forbidden] },
      { atMs: 999, record: [forbidden] },
      { atMs: 1_998, record: [forbidden] },
      { atMs: 3_000, record: [forbidden] },
    ],
    written: ['create Forbidden no', 'patch a.1 count=2', 'patch a.1 count=3', 'create Forbidden no'],
    results: [true, true, true, true],
    logged: 0,
  },
  {
    name: 'an Event expired by the API server: the repeat creates a new one',
    steps: [{ atMs: 0, record: [forbidden] }, { expire: 'a.1' }, { atMs: 1, record: [forbidden] }],
    written: ['create Forbidden no', 'create Forbidden no'],
    results: [true, true],
    logged: 0,
  },
  {
    name: 'a refused write is logged, resolves false, and the next occurrence starts again',
    steps: [{ atMs: 0, record: [forbidden] }, { refuse: [500] }, { atMs: 1, record: [forbidden] }, { atMs: 2, record: [forbidden] }],
    written: ['create Forbidden no', 'create Forbidden no'],
    results: [true, false, true],
    logged: 1,
  },
  {
    name: 'a minimum interval drops repeats of an object and reason, whatever the message',
    options: { minIntervalMs: 30_000, windowMs: 30_000 },
    steps: [
      { atMs: 0, record: [forbidden, { ...forbidden, message: 'other' }, other] },
      { atMs: 29_999, record: [forbidden] },
      { atMs: 30_000, record: [forbidden] },
    ],
    written: ['create Forbidden no', 'create Forbidden no', 'create Forbidden no'],
    results: [true, false, true, false, true],
    logged: 0,
  },
  {
    name: 'memory is bounded: a forgotten Event is not counted into',
    options: { maxKeys: 1 },
    steps: [
      { atMs: 0, record: [forbidden] },
      { atMs: 1, record: [other] },
      { atMs: 2, record: [forbidden] },
    ],
    written: ['create Forbidden no', 'create Forbidden no', 'create Forbidden no'],
    results: [true, true, true],
    logged: 0,
  },
];

test.each(cases)('$name', async ({ options, steps, written, results, logged }) => {
  const core = new FakeEvents();
  let nowMs = 0;
  const errors: object[] = [];
  const logger = { error: (object: object) => errors.push(object), debug: () => undefined };
  const recorder = new EventRecorder({ core, component: 'test', logger, now: () => nowMs, ...options });
  const resolved: boolean[] = [];
  for (const step of steps) {
    if ('refuse' in step) core.refuse = step.refuse;
    else if ('expire' in step) core.events.delete(step.expire);
    else {
      nowMs = step.atMs;
      resolved.push(...(await Promise.all(step.record.map((occurrence) => recorder.event(occurrence)))));
    }
  }
  await recorder.flush();
  expect(core.written).toEqual(written);
  expect(resolved).toEqual(results);
  expect(errors).toHaveLength(logged);
});

test('the Event says who recorded it, about what, when', async () => {
  const core = new FakeEvents();
  const recorder = new EventRecorder({ core, component: 'kruntimes-scheduler', instance: 'pod-1', logger: console, now: () => 5_000 });
  await recorder.event(forbidden);
  expect([...core.events.values()]).toEqual([
    {
      metadata: { generateName: 'a.', name: 'a.1', namespace: 'ns' },
      involvedObject: run,
      reason: 'Forbidden',
      message: 'no',
      type: 'Warning',
      source: { component: 'kruntimes-scheduler' },
      reportingComponent: 'kruntimes-scheduler',
      reportingInstance: 'pod-1',
      firstTimestamp: new Date(5_000),
      lastTimestamp: new Date(5_000),
      count: 1,
    },
  ]);
});
