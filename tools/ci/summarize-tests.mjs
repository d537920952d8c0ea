// Prints the workspace's test totals as one closing line: `tests: N passed, N failed, N skipped`.
// A jest project whose run never completed (its global setup failed, e.g. the control
// plane did not start, or jest itself crashed) writes no totals: it is named on that line
// instead of being counted as 0 failed.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

// The workspace is this script's own unless given (its test runs it on a made-up one).
const workspaceRoot = process.argv[2] ?? join(import.meta.dirname, '..', '..');
const resultsDir = join(workspaceRoot, 'tmp', 'test-results');

/** Every jest project of the workspace: its config file and the results file its reporter writes. */
async function jestProjects() {
  const configs = ['apps', 'libs', 'tools']
    .filter((group) => existsSync(join(workspaceRoot, group)))
    .flatMap((group) => readdirSync(join(workspaceRoot, group)).map((name) => join(workspaceRoot, group, name, 'jest.config.mjs')))
    .concat(join(workspaceRoot, 'e2e', 'jest.config.mjs'))
    .filter((file) => existsSync(file));
  return Promise.all(
    configs.map(async (file) => {
      const { default: config } = await import(pathToFileURL(file).href);
      // The same name as tools/ci/jest-results-reporter.mjs gives it.
      return { project: relative(workspaceRoot, dirname(file)), results: join(resultsDir, `${config.rootDir.replaceAll('/', '_')}.json`) };
    }),
  );
}

const totals = { passed: 0, failed: 0, skipped: 0 };
const unfinished = [];
const projects = await jestProjects();
for (const { project, results } of projects) {
  if (!existsSync(results)) {
    unfinished.push(project);
    continue;
  }
  const result = JSON.parse(readFileSync(results, 'utf8'));
  totals.passed += result.passed;
  totals.failed += result.failed;
  totals.skipped += result.skipped;
}
process.stdout.write(`${projects.length - unfinished.length} of ${projects.length} jest projects reported totals\n`);
const notFinished =
  unfinished.length === 0
    ? ''
    : `; NOT FINISHED (no totals: a global setup failed or jest crashed, see its output above): ${unfinished.join(', ')}`;
process.stdout.write(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped${notFinished}\n`);
if (unfinished.length > 0) process.exitCode = 1;
