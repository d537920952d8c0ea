import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { kruntimesCacheRoot } from './binaries.ts';

const run = promisify(execFile);

/**
 * A Python virtual environment with exactly the pinned requirements of `requirementsFile`
 * installed from the package index, cached outside the repository under the hash of that
 * file (one install per machine and pin set). Returns its `python`.
 */
export async function pythonTestVenv(requirementsFile: string): Promise<string> {
  const requirements = await readFile(requirementsFile);
  const key = createHash('sha256').update(requirements).digest('hex').slice(0, 16);
  const cacheRoot = kruntimesCacheRoot();
  const venv = join(cacheRoot, 'python-venvs', key);
  const python = join(venv, 'bin', 'python');
  try {
    await access(join(venv, '.complete'));
    return python;
  } catch {
    // Not installed yet (or an install was cut short): build it aside, then move it in place.
  }
  const building = `${venv}.building-${String(process.pid)}`;
  await rm(building, { recursive: true, force: true });
  await mkdir(join(cacheRoot, 'python-venvs'), { recursive: true });
  process.stderr.write(`[python-venv] installing ${requirementsFile} into ${venv}\n`);
  await run('python3', ['-m', 'venv', building]);
  await run(join(building, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirementsFile], {
    timeout: 300_000,
  });
  await writeFile(join(building, '.complete'), '');
  await rm(venv, { recursive: true, force: true });
  await rename(building, venv);
  return python;
}
