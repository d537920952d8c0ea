import { workspaceEntry } from './workspace.ts';

test('an entry point of the repository is its path; one that is not there is a usage error naming the command', () => {
  const here = new URL(import.meta.url);
  expect(workspaceEntry(here, 'krt dev')).toBe(here.pathname);
  expect(() => workspaceEntry(new URL('./no-such-entry.ts', import.meta.url), 'krt run --local')).toThrow(
    /^krt run --local runs from a clone of the kruntimes repository/,
  );
});
