import { spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
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
  options: {
    cwd: string;
    env: Record<string, string>;
    logs: { plain: string; cri: string };
    /** A user namespace's descriptor the process gets as fd 3 (UserNamespaceHandle.prefix enters it). */
    namespaceFd?: number;
  },
): StartedProcess {
  const [command, ...args] = argv;
  if (command === undefined) throw new LocalNodeError('empty command');
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: options.namespaceFd === undefined ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe', options.namespaceFd],
  });
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

/** One process as /proc/<pid>/stat shows it: its parent and its process group. */
export interface ProcessEntry {
  pid: number;
  ppid: number;
  pgrp: number;
}

/**
 * The process groups, other than the leader's own, of every descendant of `leader`: what a
 * container started in groups of its own (the Runtime Server's tasks). A container runtime's
 * kill reaches every process of the container (its cgroup); the local node reaches them by
 * the process tree, read before the leader dies (its orphans are then re-parented).
 */
export function descendantGroups(leader: number, processes: readonly ProcessEntry[]): number[] {
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of processes) children.set(entry.ppid, [...(children.get(entry.ppid) ?? []), entry]);
  const groups = new Set<number>();
  const queue = [leader];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    for (const child of children.get(pid) ?? []) {
      if (child.pgrp !== leader) groups.add(child.pgrp);
      queue.push(child.pid);
    }
  }
  return [...groups];
}

/** Every process of the machine from /proc (Linux); none where /proc cannot be read. */
export async function processTable(): Promise<ProcessEntry[]> {
  const entries: ProcessEntry[] = [];
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return entries;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      // After the ")" that ends the command name: state ppid pgrp ...
      const [, ppid = '', pgrp = ''] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      entries.push({ pid: Number(name), ppid: Number(ppid), pgrp: Number(pgrp) });
    } catch {
      // Gone meanwhile.
    }
  }
  return entries;
}
