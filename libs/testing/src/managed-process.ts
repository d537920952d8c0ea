import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { signalGroup } from '@kruntimes/host';
import type { Component } from './errors.ts';
import { ControlPlaneError } from './errors.ts';
import { waitFor } from './wait.ts';
import type { Watchdog } from '@kruntimes/host';

export interface ProcessSpec {
  component: Component;
  command: string;
  args: readonly string[];
  /** stdout and stderr go here, so that no pipe ties the process to the harness. */
  logFile: string;
  /** Extra environment on top of the minimal one (PATH, HOME, TMPDIR). */
  env?: Record<string, string>;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Default time between SIGTERM and SIGKILL. */
export const STOP_GRACE_MS = 5_000;

/**
 * One supervised server process. It runs in its own process group (so that a signal
 * reaches anything it forks and a terminal's Ctrl-C reaches the harness first), its
 * output goes to a log file, and it is registered with the watchdog, which kills the
 * group if the harness dies without stopping it.
 */
export class ManagedProcess {
  readonly component: Component;
  readonly pid: number;
  readonly logFile: string;
  /** Settles when the process has exited, however that happened. */
  readonly exited: Promise<ExitInfo>;
  #exit: ExitInfo | undefined;
  readonly #watchdog: Watchdog | undefined;

  private constructor(spec: ProcessSpec, child: ChildProcess, pid: number, watchdog: Watchdog | undefined) {
    this.component = spec.component;
    this.pid = pid;
    this.logFile = spec.logFile;
    this.#watchdog = watchdog;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
  }

  static start(spec: ProcessSpec, watchdog?: Watchdog): ManagedProcess {
    const log = openSync(spec.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(spec.command, spec.args, {
        detached: true,
        stdio: ['ignore', log, log],
        env: minimalEnv(spec.env),
      });
    } finally {
      closeSync(log); // the child holds its own descriptor
    }
    const { pid } = child;
    if (pid === undefined) {
      // spawn reports ENOENT/EACCES asynchronously through 'error'; pid is undefined then.
      throw new ControlPlaneError(`cannot start ${spec.command}`, { component: spec.component });
    }
    // Errors after a successful spawn (e.g. kill on an exited process) surface through
    // the exit promise and return values; an unhandled 'error' event would crash the harness.
    child.on('error', () => undefined);
    child.unref();
    watchdog?.watchProcessGroup(pid);
    return new ManagedProcess(spec, child, pid, watchdog);
  }

  get exitInfo(): ExitInfo | undefined {
    return this.#exit;
  }

  /** SIGTERM to the process group, SIGKILL after `graceMs`; resolves when it has exited. */
  async stop(graceMs = STOP_GRACE_MS): Promise<ExitInfo> {
    if (this.#exit === undefined) {
      signalGroup(this.pid, 'SIGTERM');
      // The timer is deliberately ref'd: the child handle is unref'd, so without it the
      // event loop could go idle and end the process before the exit is observed.
      const grace = new AbortController();
      const exited = await Promise.race([this.exited, sleep(graceMs, undefined, { signal: grace.signal }).catch(() => undefined)]);
      grace.abort();
      if (exited === undefined) signalGroup(this.pid, 'SIGKILL');
    }
    const info = await this.exited;
    // The group leader is gone; anything it forked went with SIGTERM/SIGKILL of the group.
    // Release it so that the watchdog never signals a reused process group ID.
    this.#watchdog?.releaseProcessGroup(this.pid);
    return info;
  }

  async logTail(lines = 40): Promise<string> {
    try {
      const text = await readFile(this.logFile, 'utf8');
      return text
        .split('\n')
        .slice(-lines - 1)
        .join('\n')
        .trimEnd();
    } catch (error) {
      return `(cannot read ${this.logFile}: ${error instanceof Error ? error.message : String(error)})`;
    }
  }

  /**
   * Polls `probe` every 100 ms until it answers (bounded by `timeoutMs`), unless the process
   * exits first; either failure is a ControlPlaneError with the process's log tail.
   */
  async untilReady(description: string, probe: () => Promise<true | undefined>, timeoutMs: number): Promise<void> {
    const exited = this.exited.then(() => 'exited' as const);
    const abort = new AbortController();
    try {
      const ready = await Promise.race([waitFor(description, probe, { timeoutMs, intervalMs: 100, signal: abort.signal }), exited]);
      if (ready === 'exited') throw await this.failure('exited while starting');
    } catch (error) {
      if (error instanceof ControlPlaneError) throw error;
      throw await this.failure(`not ready: ${error instanceof Error ? error.message : String(error)}`, error);
    } finally {
      abort.abort();
    }
  }

  /** A ControlPlaneError for this process, with its log tail and exit status if it exited. */
  async failure(message: string, cause?: unknown): Promise<ControlPlaneError> {
    const exit = this.#exit === undefined ? '' : ` (exited with ${this.#exit.signal ?? `code ${String(this.#exit.code)}`})`;
    return new ControlPlaneError(`${this.component}: ${message}${exit}`, {
      component: this.component,
      logTail: await this.logTail(),
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

/**
 * Components get only what they need from the environment, so that a developer's
 * KUBECONFIG, ETCD_* or proxy variables cannot change how the control plane behaves.
 */
function minimalEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', 'TMPDIR']) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return { ...env, ...extra };
}
