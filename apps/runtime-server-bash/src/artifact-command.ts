import { rmSync } from 'node:fs';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { guard } from '@kruntimes/runtime-server-core';

/** The Node script behind `krt-artifact`. */
export const ARTIFACT_SCRIPT = join(import.meta.dirname, 'bin', 'krt-artifact.ts');
/** The Node script behind `krt-input`. */
export const INPUT_SCRIPT = join(import.meta.dirname, 'bin', 'krt-input.ts');

/**
 * Writes the kruntimes commands for task code (`krt-artifact`, `krt-input`) into a fresh
 * directory and returns it: wrappers that run the scripts with this server's own node,
 * which the image has (bash task code cannot rely on Python). The directory lives as long as
 * this process: it is removed at its exit (after SIGTERM too: the server then exits), and
 * by its guard when this process is killed (SIGKILL: no exit handler runs), so Runtime
 * Servers restarted in one Pod leave none behind.
 */
export async function installArtifactCommand(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'krt-bin-'));
  // Never released: at a normal exit the handler below has removed the directory before the
  // guard sees the pipe close, and removing it again is nothing.
  guard({ removePath: dir });
  process.once('exit', () => {
    rmSync(dir, { recursive: true, force: true });
  });
  for (const [name, script] of [
    ['krt-artifact', ARTIFACT_SCRIPT],
    ['krt-input', INPUT_SCRIPT],
  ] as const) {
    const wrapper = join(dir, name);
    await writeFile(
      wrapper,
      `#!/bin/sh\nexec ${shellQuote(process.execPath)} --disable-warning=ExperimentalWarning ${shellQuote(script)} "$@"\n`,
    );
    await chmod(wrapper, 0o755);
  }
  return dir;
}

/** The same as installArtifactCommand, by what it now installs. */
export const installKrtCommands = installArtifactCommand;

/** PATH of task code: the kruntimes commands first, then the Run's own PATH or the server's. */
export function userPath(binDir: string, env: Readonly<Record<string, string>>): string {
  const own = env.PATH ?? process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  return `${binDir}${delimiter}${own}`;
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
