import { existsSync } from 'node:fs';
import { DEV_ENTRY, devExitCode } from './dev.ts';

test('krt dev runs the entry point of tools/local-cluster, found from the source location', () => {
  expect(DEV_ENTRY.pathname).toMatch(/\/tools\/local-cluster\/src\/dev\.ts$/);
  expect(existsSync(DEV_ENTRY)).toBe(true);
});

test.each([
  [0, 0],
  [1, 5],
  [2, 2],
  [3, 3],
  [null, 5],
])('dev.ts exit %p is krt exit %p', (code, expected) => {
  expect(devExitCode(code)).toBe(expected);
});
