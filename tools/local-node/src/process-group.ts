import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { LocalNodeError } from './errors.ts';

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartedProcess {
  /** PID of the leader; also the process group ID (the process is a session leader). */
  pid: number;
  exited: Promise<ExitStatus>;
}

/**
 * Starts `argv` as the leader of a new session and process group, with stdout and stderr
 * appended to `logFile`. A container is its whole process group: signals go to the group,
 * as a container runtime signals the whole container.
 */
export function startProcessGroup(
  argv: readonly string[],
  options: { cwd: string; env: Record<string, string>; logFile: string },
): StartedProcess {
  const [command, ...args] = argv;
  if (command === undefined) throw new LocalNodeError('empty command');
  mkdirSync(dirname(options.logFile), { recursive: true });
  const fd = openSync(options.logFile, 'a');
  try {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', fd, fd] });
    const exited = new Promise<ExitStatus>((resolve) => {
      // 'error' without 'exit' happens when the command cannot be executed (ENOENT):
      // report it as the shell would, exit code 127 with the reason in the log.
      child.once('error', (error) => {
        appendLine(options.logFile, `local-node: cannot start ${command}: ${error.message}`);
        resolve({ code: 127, signal: null });
      });
      child.once('exit', (code, signal) => {
        resolve({ code, signal });
      });
    });
    if (child.pid === undefined) return { pid: -1, exited };
    return { pid: child.pid, exited };
  } finally {
    // The child holds its own copy of the descriptor.
    closeSync(fd);
  }
}

function appendLine(file: string, line: string): void {
  const fd = openSync(file, 'a');
  try {
    writeSync(fd, `${line}\n`);
  } finally {
    closeSync(fd);
  }
}
