import { RUN_REASONS } from '@kruntimes/api';
import { decideRunSlot, heldRunSlots, runSlotCap } from './run-slot-cap.ts';
import type { RunSlotCap } from './run-slot-cap.ts';

describe('runSlotCap', () => {
  it.each<[string, Record<string, string> | undefined, RunSlotCap]>([
    ['no annotations: no cap', undefined, { kind: 'none' }],
    ['other annotations only: no cap', { 'kruntimes.io/automatic-retry': 'false' }, { kind: 'none' }],
    ['a whole number', { 'kruntimes.io/run-slots': '2' }, { kind: 'cap', slots: 2 }],
    ['0: nothing binds', { 'kruntimes.io/run-slots': '0' }, { kind: 'cap', slots: 0 }],
    ['surrounding blanks are ignored', { 'kruntimes.io/run-slots': ' 3 ' }, { kind: 'cap', slots: 3 }],
    ['negative', { 'kruntimes.io/run-slots': '-1' }, { kind: 'invalid', value: '-1' }],
    ['a fraction', { 'kruntimes.io/run-slots': '1.5' }, { kind: 'invalid', value: '1.5' }],
    ['a quantity suffix', { 'kruntimes.io/run-slots': '2k' }, { kind: 'invalid', value: '2k' }],
    ['empty', { 'kruntimes.io/run-slots': '' }, { kind: 'invalid', value: '' }],
    ['beyond a safe integer', { 'kruntimes.io/run-slots': '99999999999999999999' }, { kind: 'invalid', value: '99999999999999999999' }],
  ])('%s', (_name, annotations, expected) => {
    expect(runSlotCap(annotations)).toEqual(expected);
  });
});

describe('decideRunSlot', () => {
  it.each<[string, RunSlotCap, number, string | undefined]>([
    ['no cap: binds, however many are held', { kind: 'none' }, 1000, undefined],
    ['under the cap: binds', { kind: 'cap', slots: 2 }, 1, undefined],
    [
      'at the cap: waits, the message names the cap',
      { kind: 'cap', slots: 2 },
      2,
      'namespace team-a holds all 2 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "2"): the Run binds when one of them frees',
    ],
    [
      'over the cap (it was lowered): waits, the same message',
      { kind: 'cap', slots: 2 },
      5,
      'namespace team-a holds all 2 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "2"): the Run binds when one of them frees',
    ],
    [
      'a cap of 0 with nothing held: waits',
      { kind: 'cap', slots: 0 },
      0,
      'namespace team-a holds all 0 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "0"): the Run binds when one of them frees',
    ],
    [
      'an invalid annotation: waits (read as 0), the message quotes it',
      { kind: 'invalid', value: 'two' },
      0,
      'namespace team-a has namespace annotation kruntimes.io/run-slots: "two", which is not a whole number: read as a cap of 0 run slots until it is fixed',
    ],
  ])('%s', (_name, cap, held, message) => {
    const refusal = decideRunSlot({ namespace: 'team-a', cap, held });
    expect(refusal).toEqual(message === undefined ? undefined : { reason: RUN_REASONS.runSlotCapReached, message });
  });
});

describe('heldRunSlots', () => {
  it.each<[string, string[], string[], number]>([
    ['none', [], [], 0],
    ['Runs holding a unit count', ['a', 'b'], [], 2],
    ['a Run whose bind is assumed counts before the cache shows it', [], ['a'], 1],
    ['a Run both holding and assumed counts once', ['a'], ['a', 'b'], 2],
  ])('%s', (_name, holding, assumed, held) => {
    expect(heldRunSlots(holding, assumed)).toBe(held);
  });
});
