import { CLASS_MEMBER_LIMIT, FUNCTION_LINE_LIMIT, describeVerdict, judgeSizes, prunedBaseline, readBaseline } from './code-size.ts';
import type { SizeBaseline } from './code-size.ts';
import { customObjectsApiMethods, isProductFile, measureFile, trackedTypeScriptFiles } from './measure-code.ts';
import type { ClassSpan, Span } from './measure-code.ts';

const fn = (file: string, name: string, lines: number): Span => ({ file, name, lines, line: 1 });
const cls = (file: string, name: string, members: number): ClassSpan => ({ file, name, members, lines: members * 3, line: 1 });
const BASELINE: SizeBaseline = { functions: { 'libs/a/src/a.ts big': 80 }, classes: { 'libs/a/src/a.ts Big': 30 } };

describe('the size rule', () => {
  it('holds for the production code of the tree: every function over the limit and every class over it is in the baseline', () => {
    const methods = customObjectsApiMethods();
    const product = trackedTypeScriptFiles()
      .filter(isProductFile)
      .map((file) => measureFile(file, methods));
    expect(product.length).toBeGreaterThan(100);
    const verdict = judgeSizes(
      product.flatMap((metrics) => metrics.functions),
      product.flatMap((metrics) => metrics.classes),
      readBaseline(),
    );
    // Listed, with what to do: shorten a new offender (npx nx run workspace-checks:metrics shows them all).
    expect(describeVerdict({ ...verdict, leftFunctions: [], leftClasses: [] })).toEqual([]);
  });

  it.each<[string, Span[], ClassSpan[], Partial<ReturnType<typeof judgeSizes>>]>([
    ['at the limits: nothing', [fn('libs/b/src/b.ts', 'f', FUNCTION_LINE_LIMIT)], [cls('libs/b/src/b.ts', 'C', CLASS_MEMBER_LIMIT)], {}],
    [
      'one over each limit, not listed: both new',
      [fn('libs/b/src/b.ts', 'f', FUNCTION_LINE_LIMIT + 1)],
      [cls('libs/b/src/b.ts', 'C', CLASS_MEMBER_LIMIT + 1)],
      { newFunctions: [{ key: 'libs/b/src/b.ts f', size: 61 }], newClasses: [{ key: 'libs/b/src/b.ts C', size: 26 }] },
    ],
    ['listed offenders, even grown: they pass', [fn('libs/a/src/a.ts', 'big', 90)], [cls('libs/a/src/a.ts', 'Big', 31)], {}],
    [
      'a listed offender renamed or moved: new (and the old entry may leave)',
      [fn('libs/a/src/a2.ts', 'big', 80)],
      [cls('libs/a/src/a.ts', 'Big', 30)],
      { newFunctions: [{ key: 'libs/a/src/a2.ts big', size: 80 }], leftFunctions: ['libs/a/src/a.ts big'] },
    ],
    [
      'listed offenders shrunk under the limits: they may leave the baseline, nothing fails',
      [fn('libs/a/src/a.ts', 'big', 40)],
      [cls('libs/a/src/a.ts', 'Big', 10)],
      { leftFunctions: ['libs/a/src/a.ts big'], leftClasses: ['libs/a/src/a.ts Big'] },
    ],
  ])('%s', (_name, functions, classes, expected) => {
    const listed = { functions: ['libs/a/src/a.ts big'], classes: ['libs/a/src/a.ts Big'] };
    const present = {
      functions: functions.some((span) => `${span.file} ${span.name}` === listed.functions[0]),
      classes: classes.some((span) => `${span.file} ${span.name}` === listed.classes[0]),
    };
    expect(judgeSizes(functions, classes, BASELINE)).toEqual({
      newFunctions: [],
      newClasses: [],
      leftFunctions: present.functions ? [] : listed.functions,
      leftClasses: present.classes ? [] : listed.classes,
      ...expected,
    });
  });

  it('pruning removes the entries that left and never adds one', () => {
    const verdict = judgeSizes([fn('libs/c/src/c.ts', 'new', 99)], [cls('libs/a/src/a.ts', 'Big', 40)], BASELINE);
    expect(prunedBaseline(BASELINE, verdict)).toEqual({ functions: {}, classes: { 'libs/a/src/a.ts Big': 30 } });
  });
});
