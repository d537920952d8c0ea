// What belongs to a dev environment, found in /proc (Linux): `down` must find every
// process even when the supervisor that started them was killed, and check afterwards
// that no port they listened on is still listening.
import { readdir, readFile, readlink } from 'node:fs/promises';
import { sep } from 'node:path';

export interface ListeningSocket {
  host: string;
  port: number;
  /**
   * The socket's inode (/proc/net/tcp): which socket, not only which port. A port the
   * environment freed can be taken at once by another process on this busy host (a
   * parallel test); only the same inode still listening is the environment's own.
   */
  inode?: string;
}

interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  zombie: boolean;
}

async function procInfo(pid: number): Promise<ProcInfo | undefined> {
  try {
    const stat = await readFile(`/proc/${String(pid)}/stat`, 'utf8');
    // Fields after the ")" of the command name: state ppid pgrp ...
    const [state = '', ppid = '0', pgrp = '0'] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(ppid), pgrp: Number(pgrp), zombie: state === 'Z' };
  } catch {
    return undefined;
  }
}

async function readOr(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return '';
  }
}

/** This process and its ancestors: never counted as part of the environment they inspect. */
async function selfAndAncestors(): Promise<Set<number>> {
  const found = new Set<number>();
  for (let pid = process.pid; pid > 1 && !found.has(pid);) {
    found.add(pid);
    const info = await procInfo(pid);
    if (info === undefined) break;
    pid = info.ppid;
  }
  return found;
}

/**
 * Live processes of the environment in `dir`: every process started with `KRT_DEV_DIR=dir`
 * (the services, the local node agent), every Pod process (its container root is under
 * `dir`), every control-plane binary (its command line names files under `dir`), and every
 * member of the given process groups.
 */
export async function environmentProcesses(dir: string, groups: readonly number[] = []): Promise<number[]> {
  const excluded = await selfAndAncestors();
  const wantedGroups = new Set(groups);
  const prefix = dir.endsWith(sep) ? dir : `${dir}${sep}`;
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (excluded.has(pid)) continue;
    const info = await procInfo(pid);
    if (info === undefined || info.zombie) continue;
    if (wantedGroups.has(info.pgrp)) {
      found.push(pid);
      continue;
    }
    const environ = (await readOr(`/proc/${entry}/environ`)).split('\0');
    const cmdline = (await readOr(`/proc/${entry}/cmdline`)).split('\0');
    if (
      environ.includes(`KRT_DEV_DIR=${dir}`) ||
      environ.some((variable) => variable.startsWith(`KRUNTIMES_CONTAINER_ROOT=${prefix}`)) ||
      cmdline.some((arg) => arg.includes(prefix))
    ) {
      found.push(pid);
    }
  }
  return found;
}

function parseAddress(hex: string): ListeningSocket {
  const [ip = '', port = ''] = hex.split(':');
  if (ip.length === 8) {
    // IPv4, little-endian on Linux.
    const bytes = (ip.match(/../g) ?? []).map((byte) => parseInt(byte, 16)).reverse();
    return { host: bytes.join('.'), port: parseInt(port, 16) };
  }
  return { host: `[${ip}]`, port: parseInt(port, 16) };
}

/** Every TCP socket in LISTEN state on this host, with the inode that identifies it. */
async function listeningTable(): Promise<(ListeningSocket & { inode: string })[]> {
  const sockets: (ListeningSocket & { inode: string })[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readOr(table);
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state] = fields;
      const inode = fields[9];
      if (local === undefined || state !== '0A' || inode === undefined) continue;
      sockets.push({ ...parseAddress(local), inode });
    }
  }
  return sockets;
}

/** The TCP sockets in LISTEN state held by `pids` (every port they opened). */
export async function listeningSocketsOf(pids: readonly number[]): Promise<ListeningSocket[]> {
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${String(pid)}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${String(pid)}/fd/${fd}`));
        if (match?.[1] !== undefined) inodes.add(match[1]);
      } catch {
        // Closed meanwhile.
      }
    }
  }
  const seen = new Set<string>();
  const sockets: ListeningSocket[] = [];
  for (const socket of await listeningTable()) {
    const key = `${socket.host}:${String(socket.port)}`;
    if (!inodes.has(socket.inode) || seen.has(key)) continue;
    seen.add(key);
    sockets.push({ host: socket.host, port: socket.port, inode: socket.inode });
  }
  return sockets.sort((a, b) => a.host.localeCompare(b.host) || a.port - b.port);
}

/**
 * Which of `sockets` still listen: the same socket (its inode) where it is known; else
 * anything on this host listening on that port.
 */
export async function stillListening(sockets: readonly ListeningSocket[]): Promise<ListeningSocket[]> {
  const table = await listeningTable();
  return sockets.filter((socket) =>
    table.some((entry) =>
      socket.inode !== undefined
        ? entry.inode === socket.inode
        : entry.port === socket.port && (entry.host === socket.host || entry.host === '0.0.0.0' || entry.host.startsWith('[0000')),
    ),
  );
}

/** The environment's sockets as its state records them: `listening` (host:port) beside `listeningInodes`. */
export function recordedSockets(state: { listening?: string[]; listeningInodes?: string[] }): ListeningSocket[] {
  return (state.listening ?? []).flatMap((text, index) => {
    const socket = parseSocket(text);
    if (socket === undefined) return [];
    const inode = state.listeningInodes?.[index];
    return [inode === undefined || inode === '' ? socket : { ...socket, inode }];
  });
}

export function formatSocket(socket: ListeningSocket): string {
  return `${socket.host}:${String(socket.port)}`;
}

export function parseSocket(text: string): ListeningSocket | undefined {
  const match = /^(\d+\.\d+\.\d+\.\d+|\[[0-9A-Fa-f]+\]):(\d+)$/.exec(text);
  if (match?.[1] === undefined || match[2] === undefined) return undefined;
  return { host: match[1], port: Number(match[2]) };
}

/** Alive and not a zombie. */
export async function processAlive(pid: number): Promise<boolean> {
  const info = await procInfo(pid);
  return info !== undefined && !info.zombie;
}

/**
 * SIGTERM to each process group (and each process), SIGKILL after `graceMs`; resolves
 * with what is still alive after that (nothing, unless a process cannot be killed).
 */
export async function terminate(pids: readonly number[], graceMs: number): Promise<number[]> {
  const signal = (pid: number, name: NodeJS.Signals): void => {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, name);
      } catch {
        // Not a group leader, or gone.
      }
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const alive = async (): Promise<number[]> =>
    (await Promise.all(pids.map(async (pid) => ((await processAlive(pid)) ? pid : undefined)))).filter(
      (pid): pid is number => pid !== undefined,
    );
  const deadline = Date.now() + graceMs;
  let left = await alive();
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = await alive();
  }
  for (const pid of left) signal(pid, 'SIGKILL');
  for (let i = 0; i < 50 && left.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = await alive();
  }
  return left;
}
