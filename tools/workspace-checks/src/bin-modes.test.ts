import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join, normalize } from 'node:path';
import { promisify } from 'node:util';

// npm ci makes every `bin` entry of a workspace package executable; one committed 100644
// would then show as changed in `git status` right after a fresh clone's `npm ci`.
const workspaceRoot = join(import.meta.dirname, '..', '..', '..');

interface PackageJson {
  name?: string;
  workspaces?: string[];
  bin?: string | Record<string, string>;
}

async function readPackage(dir: string): Promise<PackageJson | undefined> {
  try {
    return JSON.parse(await readFile(join(workspaceRoot, dir, 'package.json'), 'utf8')) as PackageJson;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The workspace packages' directories: the root's `workspaces` (`dir` or `dir/*`). */
async function workspaceDirs(): Promise<string[]> {
  const root = await readPackage('.');
  const dirs: string[] = [];
  for (const pattern of root?.workspaces ?? []) {
    if (!pattern.endsWith('/*')) {
      dirs.push(pattern);
      continue;
    }
    const parent = pattern.slice(0, -2);
    const entries = await readdir(join(workspaceRoot, parent), { withFileTypes: true });
    dirs.push(...entries.filter((entry) => entry.isDirectory()).map((entry) => `${parent}/${entry.name}`));
  }
  return dirs.sort();
}

/** Every `bin` entry's file, relative to the workspace root. */
async function binFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const dir of await workspaceDirs()) {
    const bin = (await readPackage(dir))?.bin;
    if (bin === undefined) continue;
    for (const file of typeof bin === 'string' ? [bin] : Object.values(bin)) files.push(normalize(join(dir, file)));
  }
  return files;
}

/** The git index's mode of each file ('missing' when git does not track it). */
async function indexModes(files: string[]): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)('git', ['ls-files', '--stage', '--', ...files], { cwd: workspaceRoot });
  const modes = Object.fromEntries(files.map((file) => [file, 'missing']));
  for (const line of stdout.split('\n').filter(Boolean)) {
    // <mode> <object> <stage>\t<path>
    const [meta = '', path = ''] = line.split('\t');
    modes[path] = meta.split(' ')[0] ?? '';
  }
  return modes;
}

test('the workspace packages have bin entries (the check below sees them)', async () => {
  expect(await binFiles()).toContain('apps/krt/bin/krt.mjs');
});

test("every workspace package's bin entry is committed executable (100755)", async () => {
  const files = await binFiles();
  const modes = await indexModes(files);
  const wrong = Object.entries(modes).filter(([, mode]) => mode !== '100755');
  // Fix: git update-index --chmod=+x <file> (or chmod +x and git add).
  expect(wrong).toEqual([]);
});
