import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AddressPoolExhaustedError } from './errors.ts';

export const FIRST_HOST = 2;
export const LAST_HOST = 254;

/**
 * Hands out one 127.0.0.x (2 <= x <= 254) per Pod. Like the CNI host-local IPAM it
 * allocates round-robin from the last address handed out, so a replacement Pod gets a new
 * address and a stale peer cannot reach the wrong Pod by its old IP. An address is
 * released only once the Pod's processes are gone.
 *
 * Several agents may run on one host (one per jest worker, a local cluster next to a
 * test run), and all of them share the loopback interface. Every address held is
 * therefore also a lock file `<lockDir>/127.0.0.x` created with O_EXCL and holding the
 * owner's PID; a lock whose owner process is dead is taken over.
 */
export class AddressPool {
  readonly #lockDir: string;
  readonly #held = new Set<string>();
  #cursor: number;

  constructor(lockDir: string, options: { start?: number } = {}) {
    this.#lockDir = lockDir;
    mkdirSync(lockDir, { recursive: true });
    // Agents started at the same time should not all probe the same first address.
    this.#cursor = options.start ?? FIRST_HOST + (process.pid % (LAST_HOST - FIRST_HOST + 1));
  }

  get held(): ReadonlySet<string> {
    return this.#held;
  }

  allocate(): string {
    const size = LAST_HOST - FIRST_HOST + 1;
    for (let i = 0; i < size; i++) {
      const host = FIRST_HOST + ((this.#cursor - FIRST_HOST + i) % size);
      const address = `127.0.0.${host}`;
      if (this.#held.has(address)) continue;
      if (this.#tryLock(address)) {
        this.#held.add(address);
        this.#cursor = host + 1 > LAST_HOST ? FIRST_HOST : host + 1;
        return address;
      }
    }
    throw new AddressPoolExhaustedError(`all of 127.0.0.${FIRST_HOST}-${LAST_HOST} are held by Pods on this host`);
  }

  release(address: string): void {
    if (!this.#held.delete(address)) return;
    rmSync(join(this.#lockDir, address), { force: true });
  }

  releaseAll(): void {
    for (const address of [...this.#held]) this.release(address);
  }

  #tryLock(address: string): boolean {
    return tryLockFile(join(this.#lockDir, address));
  }
}

/**
 * Creates `file` with O_EXCL holding this process's PID: true if this process holds it now.
 * A lock whose owner died without releasing it (SIGKILL) is taken over.
 */
export function tryLockFile(file: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!ownerIsDead(file)) return false;
    rmSync(file, { force: true });
  }
  return false;
}

function ownerIsDead(file: string): boolean {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
  } catch (error) {
    // Released between our create attempt and this read: free now.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
