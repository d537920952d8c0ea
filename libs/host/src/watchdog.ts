import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { WatchdogMessage } from './watchdog-protocol.ts';

const WATCHDOG_SCRIPT = new URL('./watchdog-main.ts', import.meta.url);

export interface WatchdogOptions {
  /** Between SIGTERM and SIGKILL. */
  graceMs: number;
  /** Who the sidecar cleans up after, in its stderr lines (e.g. `test harness`, `local-node`). */
  owner: string;
}

/**
 * The client side of a sidecar process that cleans up after its owner (the test
 * harness, the local node agent) if the owner dies without doing so itself (SIGKILL, an
 * OOM kill, a jest worker crash, Ctrl-C that skips global teardown).
 *
 * The sidecar runs in its own session, reads registrations from a pipe and treats EOF on
 * that pipe as "the owner is gone": the kernel closes the pipe whatever way the owner
 * ends, so no polling and no PID reuse races are involved. It then sends SIGTERM, later
 * SIGKILL, to every registered process group and removes every registered directory.
 */
export class Watchdog {
  readonly #child: ChildProcess;
  readonly #stdin: Writable;
  #closed = false;

  private constructor(child: ChildProcess, stdin: Writable) {
    this.#child = child;
    this.#stdin = stdin;
  }

  static start(options: WatchdogOptions): Watchdog {
    const child = spawn(process.execPath, ['--no-warnings', WATCHDOG_SCRIPT.pathname, String(options.graceMs), options.owner], {
      detached: true,
      // stderr stays the owner's: the sidecar only writes when it had to clean up.
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    const { stdin } = child;
    if (child.pid === undefined) {
      throw new Error(`cannot start the watchdog process of ${options.owner}`);
    }
    child.on('error', () => undefined);
    // EPIPE when the sidecar is already gone; nothing left to tell it then.
    stdin.on('error', () => undefined);
    // Neither the sidecar nor its pipe may keep the owner's process alive.
    child.unref();
    (stdin as Writable & { unref?: () => void }).unref?.();
    return new Watchdog(child, stdin);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  watchProcessGroup(pgid: number): void {
    this.#send({ kind: 'watch-process-group', pgid });
  }

  /** After close a no-op: the owner already stopped everything, and the sidecar exits. */
  releaseProcessGroup(pgid: number): void {
    if (!this.#closed) this.#send({ kind: 'release-process-group', pgid });
  }

  watchDirectory(path: string): void {
    this.#send({ kind: 'watch-directory', path });
  }

  /** Clean shutdown: the owner stopped everything itself; the sidecar exits. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.end();
  }

  #send(message: WatchdogMessage): void {
    // Registering after close would leave a process nobody cleans up after.
    if (this.#closed) throw new Error('watchdog already closed');
    this.#stdin.write(`${JSON.stringify(message)}\n`);
  }
}
