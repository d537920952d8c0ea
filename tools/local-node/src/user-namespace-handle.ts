import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readlink, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalNodeError } from './errors.ts';
import { idMapLine } from './user-namespace.ts';

const READY_TIMEOUT_MS = 5_000;
/** The descriptor a container's process gets its namespace on (stdio[3]). */
export const NAMESPACE_FD = 3;

/**
 * A user namespace for one container, mapped to its Pod's host range, kept by an open
 * descriptor so that every start of the container enters the same one. Without newuidmap,
 * `unshare --user` cannot map a range itself, and a process that exec'd in an unmapped
 * namespace has lost its capabilities there; so a short-lived process only creates it and
 * waits while the agent (root, its parent namespace) writes the maps, and each start enters
 * it with `nsenter --user` (uid 0 of the namespace with its capabilities) and becomes the
 * container's identity with setpriv (prefix()). A descriptor, not /proc/PID/ns: a PID can be
 * reused by a process of another namespace, the host's included.
 */
export class UserNamespaceHandle {
  readonly fd: number;
  #closed = false;

  private constructor(fd: number) {
    this.fd = fd;
  }

  static async create(base: number): Promise<UserNamespaceHandle> {
    const child = spawn('unshare', ['--user', '--', '/bin/sh', '-c', 'echo up; read -r _'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const closed = new Promise<false>((resolve) =>
      child.once('close', () => {
        resolve(false);
      }),
    );
    const timeout = new AbortController();
    try {
      const up = await Promise.race([
        new Promise<boolean>((resolve) =>
          child.stdout.once('data', () => {
            resolve(true);
          }),
        ),
        closed,
        sleep(READY_TIMEOUT_MS, false, { signal: timeout.signal }).catch(() => false),
        new Promise<boolean>((resolve) =>
          child.once('error', () => {
            resolve(false);
          }),
        ),
      ]);
      const pid = child.pid;
      if (!up || pid === undefined)
        throw new LocalNodeError(`cannot create a user namespace with unshare --user: ${stderr.trim() || 'no answer'}`);
      const proc = `/proc/${String(pid)}`;
      // "up" is printed after unshare(): the namespace is a new one, which only its parent's (ours) may map.
      if ((await readlink(`${proc}/ns/user`)) === (await readlink('/proc/self/ns/user')))
        throw new LocalNodeError("unshare --user left its process in the agent's user namespace");
      try {
        await writeFile(`${proc}/uid_map`, idMapLine(base));
        await writeFile(`${proc}/gid_map`, idMapLine(base));
      } catch (error) {
        throw new LocalNodeError(
          `cannot map a user namespace to host ids ${String(base)}-${String(base + 65_535)} (the local node agent must be root)`,
          {
            cause: error,
          },
        );
      }
      return new UserNamespaceHandle(openSync(`${proc}/ns/user`, 'r'));
    } finally {
      timeout.abort();
      child.stdin.end();
      child.kill('SIGKILL');
    }
  }

  /**
   * The command that runs a container's argv in this namespace (its process gets `fd` as
   * NAMESPACE_FD): nsenter enters it as uid 0 with no groups, unshare makes its PID and mount
   * namespaces, setpriv sets `setprivArgs`, a shell closes the descriptor so that the
   * container never holds it.
   */
  prefix(setprivArgs: readonly string[]): string[] {
    return [
      'nsenter',
      `--user=/proc/self/fd/${String(NAMESPACE_FD)}`,
      '--',
      // A PID namespace and /proc of the container's own, owned by its user namespace, as
      // runc gives one: it sees no process of the host or of other containers, and its
      // root may remount that /proc (krt-wall-entry). unshare stays outside as the
      // process the agent tracks; killed, it takes the namespace's processes with it.
      'unshare',
      '--pid',
      '--fork',
      '--mount',
      '--mount-proc',
      '--kill-child=SIGKILL',
      '--',
      'setpriv',
      ...setprivArgs,
      '--',
      '/bin/sh',
      '-c',
      `exec ${String(NAMESPACE_FD)}<&-; exec "$@"`,
      'sh',
    ];
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.fd);
  }
}
