import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import type { Writable } from 'node:stream';

/**
 * The watcher: reads one line from the pipe only the Runtime Server holds. A line means
 * "released" (the execution ended on the Runtime Server's watch); end of file without one
 * means the Runtime Server died (SIGKILL, a crash), and the task's group is killed.
 */
const WATCH_SCRIPT = 'read -r _ || kill -s KILL -- "-$1" 2>/dev/null';

/** The watcher's name in the process table (its `$0`). */
export const GROUP_WATCH_NAME = 'krt-group-watch';

/** How the watcher of group `pgid` is spawned: its own session, its stdin the pipe. */
export function groupWatcher(pgid: number): {
  command: string;
  args: string[];
  options: { detached: true; stdio: ['pipe', 'ignore', 'ignore'] };
} {
  return {
    command: '/bin/sh',
    args: ['-c', WATCH_SCRIPT, GROUP_WATCH_NAME, String(pgid)],
    options: { detached: true, stdio: ['pipe', 'ignore', 'ignore'] },
  };
}

/** A watched task process group: `release()` once the Runtime Server no longer needs the guard. */
export interface GroupWatch {
  release(): void;
}

/**
 * Guards a task's process group against the Runtime Server's own death: a tiny shell
 * process outside the group (its own session, so a signal to the Runtime Server's group
 * spares it) that kills the group when the pipe from the Runtime Server closes. A Runtime
 * Server killed with SIGKILL cannot stop its tasks itself, and a container that outlives
 * it (a shared process namespace, a runtime that signals only the main process) would
 * leave them running unaccounted for. The pipe is close-on-exec: the task never holds it.
 */
export function watchGroup(pgid: number): GroupWatch {
  const { command, args, options } = groupWatcher(pgid);
  const watcher: ChildProcessByStdio<Writable, null, null> = spawn(command, args, options);
  // A watcher that could not start or died guards nothing more; the Runtime Server goes on.
  watcher.on('error', () => undefined);
  watcher.stdin.on('error', () => undefined);
  // Never keeps the Runtime Server's event loop alive.
  watcher.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      watcher.stdin.end('released\n');
    },
  };
}
