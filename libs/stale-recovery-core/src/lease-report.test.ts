import { LEASE_ANNOTATIONS } from '@kruntimes/api';
import { decodeRunRefs, includesRef, readLeaseReport } from './lease-report.ts';

describe('Lease report decoding', () => {
  it.each([
    ['absent', undefined, undefined],
    ['empty list', '[]', []],
    [
      'two refs',
      '[{"uid":"a","attempt":1},{"uid":"b","attempt":2}]',
      [
        { uid: 'a', attempt: 1 },
        { uid: 'b', attempt: 2 },
      ],
    ],
    ['not JSON', '[{', undefined],
    ['not an array', '{"uid":"a"}', undefined],
    ['a malformed item', '[{"uid":"a","attempt":"1"}]', undefined],
    ['a null item', '[null]', undefined],
    ['a fractional attempt', '[{"uid":"a","attempt":1.5}]', undefined],
  ] as const)('%s', (_name, text, expected) => {
    expect(decodeRunRefs(text)).toEqual(expected);
  });

  it('reads both annotations', () => {
    expect(readLeaseReport({ [LEASE_ANNOTATIONS.heldRuns]: '[{"uid":"a","attempt":1}]' })).toEqual({
      held: [{ uid: 'a', attempt: 1 }],
      released: undefined,
    });
    expect(readLeaseReport(undefined)).toEqual({ held: undefined, released: undefined });
  });

  it('matches uid and attempt exactly', () => {
    expect(includesRef([{ uid: 'a', attempt: 1 }], 'a', 1)).toBe(true);
    expect(includesRef([{ uid: 'a', attempt: 1 }], 'a', 2)).toBe(false);
    expect(includesRef(undefined, 'a', 1)).toBe(false);
  });
});
