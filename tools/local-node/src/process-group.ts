import { spawn } from 'node:child_process';
import { LocalNodeError } from './errors.ts';
import { ContainerLogWriter } from './log-writer.ts';

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface StartedProcess {
  /** PID of the leader; also the process group ID (the process is a session leader). */
  pid: number;
  exited: Promise<ExitStatus>;
  /**
   * Both output streams ended and their logs are written: after the exit, once no process
   * holds the pipes any more (the group is killed on exit).
   */
  logsClosed: Promise<void>;
}

/**
 * Starts `argv` as the leader of a new session and process group, its stdout and stderr
 * written by a ContainerLogWriter (`logs`). A container is its whole process group:
 * signals go to the group, as a container runtime signals the whole container.
 */
export function startProcessGroup(
  argv: readonly string[],
  options: { cwd: string; env: Record<string, string>; logs: { plain: string; cri: string } },
): StartedProcess {
  const [command, ...args] = argv;
  if (command === undefined) throw new LocalNodeError('empty command');
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs = new ContainerLogWriter(options.logs, { stdout: child.stdout, stderr: child.stderr });
  const exited = new Promise<ExitStatus>((resolve) => {
    // 'error' without 'exit' happens when the command cannot be executed (ENOENT):
    // report it as the shell would, exit code 127 with the reason in the log.
    child.once('error', (error) => {
      logs.note(`local-node: cannot start ${command}: ${error.message}`);
      resolve({ code: 127, signal: null });
    });
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  return { pid: child.pid ?? -1, exited, logsClosed: logs.closed };
}
