import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** The Node script behind `krt-artifact`. */
export const ARTIFACT_SCRIPT = join(import.meta.dirname, 'bin', 'krt-artifact.ts');

/**
 * Writes the `krt-artifact` command for task code into a fresh directory and returns it:
 * a wrapper that runs the script with this server's own node, which the image has (bash
 * task code cannot rely on Python).
 */
export async function installArtifactCommand(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'krt-bin-'));
  const wrapper = join(dir, 'krt-artifact');
  await writeFile(
    wrapper,
    `#!/bin/sh\nexec ${shellQuote(process.execPath)} --disable-warning=ExperimentalWarning ${shellQuote(ARTIFACT_SCRIPT)} "$@"\n`,
  );
  await chmod(wrapper, 0o755);
  return dir;
}

/** PATH of task code: the kruntimes commands first, then the Run's own PATH or the server's. */
export function userPath(binDir: string, env: Readonly<Record<string, string>>): string {
  const own = env.PATH ?? process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  return `${binDir}${delimiter}${own}`;
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
