// The processes `dev up` supervises: each component in its own process group, stopped in reverse order.
import { spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ControlPlane } from '@kruntimes/testing';
import { REPO_ROOT } from '@kruntimes/testing';
import { environmentProcesses, formatSocket, recordedSockets, stillListening, terminate } from './dev-processes.ts';
import { stateFile } from './dev-state.ts';
import type { DevComponent, DevState } from './dev-state.ts';

export const STOP_GRACE_MS = 10_000;
const LEFTOVER_GRACE_MS = 3_000;
const POLL_MS = 200;

export type Say = (line: string) => void;

/** A failure explained by its message alone (printed without a stack). */
export class DevError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DevError';
  }
}

export class StopRequested extends Error {
  constructor(signal: string) {
    super(`${signal}: stopping`);
    this.name = 'StopRequested';
  }
}

export interface Running extends DevComponent {
  name: string;
  exited: Promise<number | null>;
  /** undefined while it runs; null when a signal ended it (exitSignal). */
  exitCode: number | null | undefined;
  exitSignal?: NodeJS.Signals | null;
  /** The log's length when this process started: what it wrote comes after. */
  logStart: number;
}

/** `node <script> <args>` with its output appended to `<dir>/logs/<name>.log`, without the caller's KUBECONFIG. */
export function spawnComponent(dir: string, name: string, script: string, args: string[], env: Record<string, string> = {}): Running {
  return spawnProgram(dir, name, process.execPath, ['--no-warnings=ExperimentalWarning', join(REPO_ROOT, script), ...args], env);
}

/** Any program (e.g. a pinned binary) supervised like a component; `env` is added to this process's. */
export function spawnProgram(dir: string, name: string, program: string, args: string[], env: Record<string, string> = {}): Running {
  const log = join(dir, 'logs', `${name}.log`);
  const fd = openSync(log, 'a');
  let child;
  let logStart;
  try {
    logStart = fstatSync(fd).size;
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, KRT_DEV_DIR: dir };
    delete childEnv.KUBECONFIG;
    // Its own process group: Ctrl-C reaches only the supervisor, which stops the components in order.
    child = spawn(program, args, {
      cwd: dir,
      detached: true,
      stdio: ['ignore', fd, fd],
      env: childEnv,
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`cannot start ${name}`);
  child.on('error', () => undefined);
  child.unref();
  const component: Running = {
    name,
    pid,
    log,
    logStart,
    exitCode: undefined,
    exited: new Promise((resolve) => {
      child.once('exit', (exitCode, signal) => {
        component.exitCode = exitCode;
        component.exitSignal = signal;
        resolve(exitCode);
      });
    }),
  };
  return component;
}

/** Polls `probe` every 200 ms until it is true; bounded by `timeoutMs`, ended early by `signal`. */
export async function waitUntil(what: string, signal: AbortSignal, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (signal.aborted) throw signal.reason as Error;
    if (await probe()) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${String(timeoutMs / 1000)} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Every component, newest first (the gateway before the node agent and its Pods); false when one survived SIGKILL. */
async function stopComponents(running: readonly Running[], say: Say): Promise<boolean> {
  let clean = true;
  for (const component of [...running].reverse()) {
    const left = await terminate([component.pid], STOP_GRACE_MS);
    if (left.length > 0) {
      clean = false;
      say(`${component.name}: processes ${left.join(', ')} survived SIGKILL`);
    }
  }
  return clean;
}

/** Whatever escaped its group (e.g. a Pod process of an agent that was killed); false when some survived. */
async function stopLeftovers(dir: string, running: readonly Running[], say: Say): Promise<boolean> {
  const leftovers = await environmentProcesses(
    dir,
    running.map((component) => component.pid),
  );
  if (leftovers.length === 0) return true;
  say(`stopping ${String(leftovers.length)} leftover processes: ${leftovers.join(', ')}`);
  return (await terminate(leftovers, LEFTOVER_GRACE_MS)).length === 0;
}

/** False when a port the environment listened on once it was ready still listens. */
async function portsClosed(state: DevState, say: Say): Promise<boolean> {
  const listening = await stillListening(recordedSockets(state));
  if (listening.length === 0) return true;
  say(`still listening after the stop: ${listening.map(formatSocket).join(' ')}`);
  return false;
}

/** Stops the services (gateway first), then the node agent (every Pod), then the control plane; checks nothing is left. */
export async function teardown(
  dir: string,
  running: readonly Running[],
  controlPlane: ControlPlane | undefined,
  state: DevState,
  say: Say,
): Promise<boolean> {
  let clean = await stopComponents(running, say);
  try {
    await controlPlane?.stop();
  } catch (error) {
    clean = false;
    say(`stopping the control plane: ${error instanceof Error ? error.message : String(error)}`);
  }
  clean = (await stopLeftovers(dir, running, say)) && clean;
  clean = (await portsClosed(state, say)) && clean;
  await rm(stateFile(dir), { force: true });
  say(clean ? 'stopped: no process and no listening port left' : 'stopped, but not cleanly (see above)');
  return clean;
}
