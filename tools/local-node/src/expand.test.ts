import { expand } from './expand.ts';

const vars: Record<string, string> = { A: 'alpha', EMPTY: '' };
const lookup = (name: string): string | undefined => vars[name];

test.each([
  ['plain', 'plain'],
  ['$(A)', 'alpha'],
  ['x-$(A)-y', 'x-alpha-y'],
  ['$(MISSING)', '$(MISSING)'],
  ['$$(A)', '$(A)'],
  ['$$', '$'],
  ['$(EMPTY)!', '!'],
  ['$(A', '$(A'],
  ['cost $5', 'cost $5'],
  ['end$', 'end$'],
])('expand(%j) = %j', (input, expected) => {
  expect(expand(input, lookup)).toBe(expected);
});
