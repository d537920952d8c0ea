import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { LocalNodeError } from './errors.ts';

const REAPER_SCRIPT = new URL('./reaper-main.ts', import.meta.url);

/**
 * A sidecar process that kills every container process group the agent started if the
 * agent dies without stopping them (SIGKILL, OOM, a crashed jest worker). It runs in its
 * own session and treats EOF on its stdin pipe as "the agent is gone": no polling and no
 * PID-reuse race on the agent's PID. A clean stop() closes the pipe after the agent has
 * already stopped everything, so the sidecar finds nothing left and exits.
 */
export class Reaper {
  readonly #child: ChildProcess;
  readonly #stdin: Writable;
  #closed = false;

  private constructor(child: ChildProcess, stdin: Writable) {
    this.#child = child;
    this.#stdin = stdin;
  }

  static start(graceMs = 2_000): Reaper {
    const child = spawn(process.execPath, ['--no-warnings', REAPER_SCRIPT.pathname, String(graceMs)], {
      detached: true,
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    if (child.pid === undefined) throw new LocalNodeError('cannot start the reaper sidecar');
    // A failed spawn surfaces as a missing pid above; a later EPIPE means it already exited.
    child.on('error', () => undefined);
    child.stdin.on('error', () => undefined);
    child.unref();
    (child.stdin as Writable & { unref?: () => void }).unref?.();
    return new Reaper(child, child.stdin);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  watch(pgid: number): void {
    this.#send(`+${pgid}`);
  }

  release(pgid: number): void {
    this.#send(`-${pgid}`);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.end();
  }

  #send(line: string): void {
    if (!this.#closed) this.#stdin.write(`${line}\n`);
  }
}
