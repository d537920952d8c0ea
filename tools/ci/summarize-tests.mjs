// Prints the workspace's test totals as one closing line: `tests: N passed, N failed, N skipped`.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const resultsDir = join(import.meta.dirname, '..', '..', 'tmp', 'test-results');
const totals = { passed: 0, failed: 0, skipped: 0 };
const files = existsSync(resultsDir) ? readdirSync(resultsDir).filter((file) => file.endsWith('.json')) : [];
for (const file of files) {
  const result = JSON.parse(readFileSync(join(resultsDir, file), 'utf8'));
  totals.passed += result.passed;
  totals.failed += result.failed;
  totals.skipped += result.skipped;
}
process.stdout.write(`${files.length} jest projects\n`);
process.stdout.write(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`);
