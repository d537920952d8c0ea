import { spawn } from 'node:child_process';
import { EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { workspaceEntry } from '../workspace.ts';

/**
 * The local dev environment lives in tools/local-cluster (a tool: it starts the control
 * plane from the test harness and the local node agent), which an app may not import
 * (module boundaries). `krt dev` therefore runs its entry point as a child process; the
 * repository root is found from this file's place in it.
 */
export const DEV_ENTRY = new URL('../../../../tools/local-cluster/src/dev.ts', import.meta.url);

/** dev.ts exits 0 ok, 1 failed, 2 usage, 3 not running; krt's table has no "1" for platform failures. */
export function devExitCode(code: number | null): ExitCode {
  if (code === 0) return EXIT.ok;
  if (code === 2) return EXIT.usage;
  if (code === 3) return EXIT.notFound;
  return EXIT.unavailable;
}

/** `krt dev up|down|status|env|logs ...`: output passes straight through. */
export async function devCommand(args: readonly string[]): Promise<ExitCode> {
  const entry = workspaceEntry(DEV_ENTRY, 'krt dev');
  const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', entry, ...args], { stdio: 'inherit' });
  // Ctrl-C reaches the child too (same process group) and it stops everything in order:
  // krt waits for that instead of exiting under it. A SIGTERM sent to krt alone is passed on.
  const ignore = (): void => undefined;
  const forward = (): void => {
    child.kill('SIGTERM');
  };
  process.on('SIGINT', ignore);
  process.on('SIGTERM', forward);
  try {
    return await new Promise<ExitCode>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => {
        resolve(devExitCode(code));
      });
    });
  } finally {
    process.off('SIGINT', ignore);
    process.off('SIGTERM', forward);
  }
}
