// Records each jest run's totals in tmp/test-results/ so that CI can print one closing
// line for the whole workspace (nx runs one jest per project).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const resultsDir = join(import.meta.dirname, '..', '..', 'tmp', 'test-results');

export default class JestResultsReporter {
  /** @param {import('@jest/reporters').Config.GlobalConfig} globalConfig */
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  /** @param {unknown} _contexts @param {import('@jest/reporters').AggregatedResult} results */
  onRunComplete(_contexts, results) {
    mkdirSync(resultsDir, { recursive: true });
    const name = this.rootDir.replaceAll('/', '_');
    const totals = {
      rootDir: this.rootDir,
      passed: results.numPassedTests,
      failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
      skipped: results.numPendingTests + results.numTodoTests,
    };
    writeFileSync(join(resultsDir, `${name}.json`), `${JSON.stringify(totals)}\n`);
  }
}
