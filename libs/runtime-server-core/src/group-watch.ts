import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { isAbsolute } from 'node:path';
import type { Writable } from 'node:stream';

/**
 * The guard: reads lines from the pipe only the Runtime Server holds. `group N` names the
 * process group to kill (known only once the process is spawned), `released` means the
 * Runtime Server ended and cleaned up what it guarded itself. End of file without
 * `released` means the Runtime Server died (SIGKILL, a crash): the group is killed, then
 * the paths are removed (once more after a second if one is still there: a member killed
 * in the middle of a write may still create a file).
 */
const GUARD_SCRIPT = [
  'g=$1; shift',
  'while read -r w a; do case $w in released) exit 0;; group) g=$a;; esac; done',
  'end() { [ -z "$g" ] || kill -s KILL -- "-$g" 2>/dev/null; rm -rf -- "$@" 2>/dev/null; }',
  'end "$@"',
  'for p in "$@"; do [ ! -e "$p" ] || { sleep 1; end "$@"; break; }; done',
].join('\n');

/** The guard's name in the process table (its `$0`). */
export const GUARD_NAME = 'krt-guard';

/** What a guard ends when the Runtime Server dies without releasing it. */
export interface GuardOptions {
  /** A process group (its leader's pid) to SIGKILL; `Guard.group` can name it later. */
  readonly killGroup?: number;
  /** Absolute paths removed (recursively) after the group was killed. */
  readonly removePaths?: readonly string[];
}

/** How a guard is spawned: its own session, its stdin the pipe. */
export function guardProcess(options: GuardOptions): {
  command: string;
  args: string[];
  options: { detached: true; stdio: ['pipe', 'ignore', 'ignore'] };
} {
  const { killGroup, removePaths = [] } = options;
  if (killGroup !== undefined) checkGroup(killGroup);
  for (const path of removePaths) {
    // A relative path would be resolved against wherever the guard runs.
    if (!isAbsolute(path)) throw new Error(`a guarded path must be absolute: ${path}`);
  }
  return {
    command: '/bin/sh',
    args: ['-c', GUARD_SCRIPT, GUARD_NAME, killGroup === undefined ? '' : String(killGroup), ...removePaths],
    options: { detached: true, stdio: ['pipe', 'ignore', 'ignore'] },
  };
}

/** What the Runtime Server's death would end: `release()` once the Runtime Server ended it itself. */
export interface Guard {
  /** From now on the Runtime Server's death kills this process group too. */
  group(pgid: number): void;
  /** The Runtime Server ended (and removed) what is guarded: the guard exits and does nothing. */
  release(): void;
}

/**
 * Guards what a Runtime Server started or made against its own death: a tiny shell
 * process outside the Runtime Server's process group (its own session, so a signal to
 * that group spares it) that kills a process group and removes paths when the pipe from
 * the Runtime Server closes without a release. A Runtime Server killed with SIGKILL
 * cannot clean up itself, and a container that outlives it (a shared process namespace,
 * a runtime that signals only the main process) would keep the processes running and the
 * temporary directories on its disk. The pipe is close-on-exec: no process the Runtime
 * Server starts holds it. Never keeps the Runtime Server's event loop alive.
 */
export function guard(options: GuardOptions): Guard {
  const { command, args, options: spawnOptions } = guardProcess(options);
  const child: ChildProcessByStdio<Writable, null, null> = spawn(command, args, spawnOptions);
  // A guard that could not start or died guards nothing more; the Runtime Server goes on.
  child.on('error', () => undefined);
  child.stdin.on('error', () => undefined);
  child.unref();
  // The pipe's handle too: a guard held for the server's lifetime must not keep it running.
  (child.stdin as Writable & { unref?: () => void }).unref?.();
  let released = false;
  return {
    group(pgid) {
      checkGroup(pgid);
      if (!released) child.stdin.write(`group ${String(pgid)}\n`);
    },
    release() {
      if (released) return;
      released = true;
      child.stdin.end('released\n');
    },
  };
}

function checkGroup(pgid: number): void {
  // 0 and 1 would make `kill -- -N` signal the guard's own group or every process.
  if (!Number.isInteger(pgid) || pgid <= 1) throw new Error(`not a process group to guard: ${String(pgid)}`);
}
