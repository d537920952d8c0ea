import { readdir, readFile, readlink } from 'node:fs/promises';
import { connect } from 'node:net';

export interface ListeningSocket {
  host: string;
  port: number;
  /** The process that holds it. */
  pid: number;
}

/** Every process of the given process groups (a Pod's container, the gateway, and what they forked). */
export async function processesOfGroups(groups: readonly number[]): Promise<number[]> {
  const wanted = new Set(groups);
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Fields after the ")" of the command name: state ppid pgrp ...
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      if (wanted.has(pgrp)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

function parseAddress(hex: string): { host: string; port: number } {
  const [ip = '', port = ''] = hex.split(':');
  if (ip.length === 8) {
    // IPv4, little-endian on Linux.
    const bytes = (ip.match(/../g) ?? []).map((byte) => parseInt(byte, 16)).reverse();
    return { host: bytes.join('.'), port: parseInt(port, 16) };
  }
  return { host: `[ipv6 ${ip}]`, port: parseInt(port, 16) };
}

/**
 * The TCP sockets in LISTEN state held by `pids`, from /proc: every port they opened,
 * not only the ones a test knows about.
 */
export async function listeningSockets(pids: readonly number[]): Promise<ListeningSocket[]> {
  const inodeOwner = new Map<string, number>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = await readlink(`/proc/${pid}/fd/${fd}`);
        const match = /^socket:\[(\d+)\]$/.exec(target);
        if (match?.[1] !== undefined) inodeOwner.set(match[1], pid);
      } catch {
        // Closed meanwhile.
      }
    }
  }
  const sockets: ListeningSocket[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = await readFile(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state] = fields;
      const inode = fields[9];
      if (local === undefined || state !== '0A' || inode === undefined) continue;
      const pid = inodeOwner.get(inode);
      if (pid !== undefined) sockets.push({ ...parseAddress(local), pid });
    }
  }
  return sockets;
}

export interface PlaintextAttempt {
  /** What came back, as text (binary frames of TLS alerts or HTTP/2 show as garbage). */
  response: string;
  /** The HTTP status when the answer was HTTP/1.x, else undefined. */
  status: number | undefined;
}

/**
 * One plaintext HTTP/1.1 request carrying `Authorization: Bearer <token>`, written raw on
 * a TCP connection; resolves with whatever came back before the server closed or `timeoutMs`.
 */
export async function plaintextRequestWithToken(
  host: string,
  port: number,
  token: string,
  request: { method: string; path: string },
  timeoutMs = 3_000,
): Promise<PlaintextAttempt> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host, port });
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      const response = Buffer.concat(chunks).toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(response);
      resolve({ response, status: match?.[1] === undefined ? undefined : Number(match[1]) });
    };
    const timer = setTimeout(done, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', done);
    socket.on('close', done);
    socket.on('error', done);
    socket.on('connect', () => {
      const body = request.method === 'GET' ? '' : '{}';
      socket.write(
        [
          `${request.method} ${request.path} HTTP/1.1`,
          `Host: ${host}:${port}`,
          `Authorization: Bearer ${token}`,
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
          'Connection: close',
          '',
          body,
        ].join('\r\n'),
      );
    });
  });
}
