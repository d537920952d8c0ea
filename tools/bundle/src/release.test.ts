import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { bundleCli } from './release.ts';

const run = promisify(execFile);
const FIXTURE = join(import.meta.dirname, '..', 'test-fixtures', 'cli', 'main.ts');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'release-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('bundleCli', () => {
  it('makes one CommonJS file with its dependencies inside, whose import.meta.url is the file itself', async () => {
    const bundle = await bundleCli(FIXTURE, join(dir, 'cli.cjs'));
    expect(bundle.bytes).toBeGreaterThan(0);
    const text = await readFile(bundle.file, 'utf8');
    expect(text).not.toMatch(/require\("yaml"\)/);
    await writeFile(join(dir, 'beside.txt'), '');
    // Run from elsewhere, with no node_modules near the file: nothing is resolved at run time.
    const { stdout } = await run(process.execPath, [bundle.file, 'a', 'b'], { cwd: tmpdir() });
    expect(parse(stdout)).toEqual({ args: ['a', 'b'], beside: join(dir, 'beside.txt'), besideExists: true });
  });
});
