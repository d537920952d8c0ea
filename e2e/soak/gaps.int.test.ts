// The soak's figure of unserved stretches during planned faults (pure; beside the soak).
import { describe, expect, it } from '@jest/globals';
import { longestGaps } from './gaps.ts';
import type { Answer } from './gaps.ts';

const ok = (end: number): Answer => ({ run: 'fn', end, ok: true });
const no = (end: number): Answer => ({ run: 'fn', end, ok: false });

describe('longestGaps', () => {
  const cases: {
    name: string;
    answers: Answer[];
    windows: { start: number; end: number }[];
    expected: { from: number; to: number; open: boolean; refused: number } | undefined;
  }[] = [
    { name: 'no window', answers: [ok(0), ok(100)], windows: [], expected: undefined },
    {
      name: 'steady 200s: the longest step',
      answers: [ok(0), ok(100), ok(250), ok(300), ok(400)],
      windows: [{ start: 50, end: 350 }],
      expected: { from: 100, to: 250, open: false, refused: 0 },
    },
    {
      name: 'a stretch begun before the window counts whole',
      answers: [ok(0), no(500), no(900), ok(1_500), ok(1_600)],
      windows: [{ start: 1_000, end: 1_200 }],
      expected: { from: 0, to: 1_500, open: false, refused: 2 },
    },
    {
      name: 'a stretch that ends after the window counts whole',
      answers: [ok(0), ok(100), no(300), ok(2_000)],
      windows: [{ start: 50, end: 400 }],
      expected: { from: 100, to: 2_000, open: false, refused: 1 },
    },
    {
      name: 'no 200 after: open to the last answer',
      answers: [ok(0), no(300), no(5_000)],
      windows: [{ start: 100, end: 400 }],
      expected: { from: 0, to: 5_000, open: true, refused: 2 },
    },
    {
      name: 'the longest over several windows',
      answers: [ok(0), ok(200), ok(1_000), ok(1_100), ok(3_000), ok(3_100)],
      windows: [
        { start: 100, end: 150 },
        { start: 1_050, end: 2_000 },
      ],
      expected: { from: 1_100, to: 3_000, open: false, refused: 0 },
    },
  ];
  it.each(cases)('$name', ({ answers, windows, expected }) => {
    const gap = longestGaps(answers, ['fn'], windows).get('fn');
    expect(gap === undefined ? undefined : { from: gap.from, to: gap.to, open: gap.open, refused: gap.refused }).toEqual(expected);
  });

  it('keeps the Runs apart', () => {
    const answers: Answer[] = [ok(0), { run: 'other', end: 50, ok: true }, ok(1_000)];
    expect(longestGaps(answers, ['fn', 'other'], [{ start: 10, end: 20 }]).get('fn')).toMatchObject({ from: 0, to: 1_000 });
  });
});
