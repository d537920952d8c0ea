import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// CI's closing totals line (tools/ci/summarize-tests.mjs), run on a made-up workspace of
// two jest projects whose reporter wrote the given totals.
const script = join(import.meta.dirname, '..', '..', 'ci', 'summarize-tests.mjs');
let workspace: string;

beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'summarize-tests-'));
  for (const project of ['libs/one', 'e2e']) {
    await mkdir(join(workspace, project), { recursive: true });
    // e2e's rootDir is the workspace, as in the real one.
    const rootDir = project === 'e2e' ? workspace : join(workspace, project);
    await writeFile(join(workspace, project, 'jest.config.mjs'), `export default { rootDir: ${JSON.stringify(rootDir)} };\n`);
  }
  await mkdir(join(workspace, 'tmp', 'test-results'), { recursive: true });
});

afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

async function report(rootDir: string, totals: { passed: number; failed: number; skipped: number }): Promise<void> {
  await writeFile(join(workspace, 'tmp', 'test-results', `${rootDir.replaceAll('/', '_')}.json`), JSON.stringify({ rootDir, ...totals }));
}

async function summarize(): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [script, workspace]);
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

test('every project reported: the sums', async () => {
  await report(join(workspace, 'libs/one'), { passed: 3, failed: 1, skipped: 0 });
  await report(workspace, { passed: 10, failed: 0, skipped: 2 });
  await expect(summarize()).resolves.toEqual({
    code: 0,
    stdout: '2 of 2 jest projects reported totals\ntests: 13 passed, 1 failed, 2 skipped\n',
  });
});

test('a project whose global setup failed wrote nothing: named, and the script fails', async () => {
  await report(join(workspace, 'libs/one'), { passed: 3, failed: 0, skipped: 0 });
  const { code, stdout } = await summarize();
  expect(code).toBe(1);
  expect(stdout).toContain('1 of 2 jest projects reported totals');
  expect(stdout).toMatch(/^tests: 3 passed, 0 failed, 0 skipped; NOT FINISHED .*: e2e$/m);
});
