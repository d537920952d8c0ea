import { ApiException } from '@kubernetes/client-node';
import { fencedWrite } from './fenced-write.ts';
import type { WriteResult } from './refusal.ts';

/** A versioned object; `refuse` makes `decide` refuse that version. */
interface Item {
  version: number;
  refuse?: boolean;
}

const conflict = new ApiException<unknown>(409, 'Conflict', {}, {});
const notFound = new ApiException<unknown>(404, 'NotFound', {}, {});

interface Scenario {
  name: string;
  assumed?: Item;
  /** What each read returns, in order. */
  reads: (Item | undefined)[];
  /** How each write ends, in order: 'ok', 'conflict' or 'notFound'. */
  writes: ('ok' | 'conflict' | 'notFound')[];
  retries?: number;
  expected: { result: true | string; reads: number; writes: number; conflicts: number; writtenVersion?: number };
}

const scenarios: Scenario[] = [
  {
    name: 'the assumed version written',
    assumed: { version: 1 },
    reads: [],
    writes: ['ok'],
    expected: { result: true, reads: 0, writes: 1, conflicts: 0, writtenVersion: 1 },
  },
  {
    name: 'without one, the live version read and written',
    reads: [{ version: 2 }],
    writes: ['ok'],
    expected: { result: true, reads: 1, writes: 1, conflicts: 0, writtenVersion: 2 },
  },
  {
    name: 'a Conflict without retries returned at once',
    assumed: { version: 1 },
    reads: [],
    writes: ['conflict'],
    expected: { result: 'Conflict', reads: 0, writes: 1, conflicts: 1 },
  },
  {
    name: 'a Conflict with retries: read again and written',
    assumed: { version: 1 },
    reads: [{ version: 2 }],
    writes: ['conflict', 'ok'],
    retries: 2,
    expected: { result: true, reads: 1, writes: 2, conflicts: 1, writtenVersion: 2 },
  },
  {
    name: 'Conflicts beyond the retries returned',
    reads: [{ version: 1 }, { version: 2 }, { version: 3 }],
    writes: ['conflict', 'conflict', 'conflict'],
    retries: 2,
    expected: { result: 'Conflict', reads: 3, writes: 3, conflicts: 3 },
  },
  {
    name: 'an assumed version that refuses: the live one decides',
    assumed: { version: 1, refuse: true },
    reads: [{ version: 2 }],
    writes: ['ok'],
    retries: 1,
    expected: { result: true, reads: 1, writes: 1, conflicts: 0, writtenVersion: 2 },
  },
  {
    name: 'an assumed version that refuses, no retries: refused',
    assumed: { version: 1, refuse: true },
    reads: [],
    writes: [],
    expected: { result: 'Refused', reads: 0, writes: 0, conflicts: 0 },
  },
  {
    name: 'a live version that refuses: final, retries or not',
    reads: [{ version: 1, refuse: true }],
    writes: [],
    retries: 5,
    expected: { result: 'Refused', reads: 1, writes: 0, conflicts: 0 },
  },
  {
    name: 'a version read after a Conflict that refuses: final',
    assumed: { version: 1 },
    reads: [{ version: 2, refuse: true }],
    writes: ['conflict'],
    retries: 5,
    expected: { result: 'Refused', reads: 1, writes: 1, conflicts: 1 },
  },
  {
    name: 'gone when read',
    reads: [undefined],
    writes: [],
    retries: 5,
    expected: { result: 'NotFound', reads: 1, writes: 0, conflicts: 0 },
  },
  {
    name: 'gone when written',
    assumed: { version: 1 },
    reads: [],
    writes: ['notFound'],
    retries: 5,
    expected: { result: 'NotFound', reads: 0, writes: 1, conflicts: 0 },
  },
];

test.each(scenarios)('$name', async ({ assumed, reads, writes, retries, expected }) => {
  const counts = { reads: 0, writes: 0, conflicts: 0 };
  let writtenVersion: number | undefined;
  const result = await fencedWrite<Item, string>({
    read: () => Promise.resolve(reads[counts.reads++]),
    ...(assumed === undefined ? {} : { assumed }),
    ...(retries === undefined ? {} : { retries }),
    onConflict: () => {
      counts.conflicts += 1;
    },
    decide: (item) =>
      item.refuse === true
        ? { refuse: `version ${item.version} refuses` }
        : {
            write: (): Promise<WriteResult<Item>> => {
              const outcome = writes[counts.writes++];
              if (outcome === 'conflict') return Promise.resolve({ ok: false, reason: 'Conflict', error: conflict });
              if (outcome === 'notFound') return Promise.resolve({ ok: false, reason: 'NotFound', error: notFound });
              writtenVersion = item.version;
              return Promise.resolve({ ok: true, object: item });
            },
          },
  });
  expect({ result: result.ok ? true : result.reason, ...counts, ...(writtenVersion === undefined ? {} : { writtenVersion }) }).toEqual(
    expected,
  );
});

test('the assumed version is decided on as a copy: a cached object is never changed', async () => {
  const cached = Object.freeze({ version: 1 });
  const result = await fencedWrite<Item, string>({
    read: () => Promise.resolve(undefined),
    assumed: cached,
    decide: (item) => {
      item.version = 2;
      return { write: () => Promise.resolve({ ok: true, object: item }) };
    },
  });
  expect(result).toEqual({ ok: true, object: { version: 2 } });
  expect(cached).toEqual({ version: 1 });
});
