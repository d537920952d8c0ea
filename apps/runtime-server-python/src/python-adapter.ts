import { execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { KruntimesError } from '@kruntimes/errors';
import type {
  FunctionConfig,
  FunctionEvents,
  FunctionSpec,
  LanguageAdapter,
  LoadedFunction,
  TaskCommand,
} from '@kruntimes/runtime-server-core';
import type { Logger } from 'pino';
import { userPythonPath } from './helper-module.ts';
import { PythonFunction, needsColdStart, spareAlive, startSpareWorker } from './python-function.ts';

/** `module:function` (dotted module) or `function` (in module `main`). */
const HANDLER = /^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:)?[A-Za-z_]\w*$/;

export const WORKER_SCRIPT = join(import.meta.dirname, 'shim', 'krt_worker.py');

/**
 * The interpreter to run, resolved once: `KRT_PYTHON` or `python3` on PATH, asked for
 * its real executable so that a version-manager shim is not paid for on every spawn.
 */
export function resolvePython(configured = process.env.KRT_PYTHON ?? 'python3'): string {
  return execFileSync(configured, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8', timeout: 30_000 }).trim();
}

export interface PythonAdapterOptions {
  /**
   * Keep one function worker started ahead (an interpreter that has already started and
   * imported the worker), so that a registration only imports the user's module.
   */
  spareWorker?: boolean;
}

export class PythonAdapter implements LanguageAdapter {
  readonly language = 'python';
  readonly probe: readonly string[];
  readonly #python: string;
  #spare: ChildProcess | undefined;

  constructor(python: string, options: PythonAdapterOptions = {}) {
    this.#python = python;
    this.probe = [python, '-c', 'pass'];
    if (options.spareWorker === true) this.#spare = startSpareWorker(python, WORKER_SCRIPT);
  }

  prepare(config: FunctionConfig): void {
    if (!HANDLER.test(config.handler)) {
      throw new KruntimesError('InvalidRequest', `handler ${JSON.stringify(config.handler)} is not module:function or function`);
    }
  }

  register(spec: FunctionSpec, events: FunctionEvents, logger: Logger): Promise<LoadedFunction> {
    // A spare runs as this server's user: a walled registration starts cold as its own.
    const spare = needsColdStart(spec.env) || spec.sandbox.identity !== undefined ? undefined : this.#takeSpare();
    return PythonFunction.start({ python: this.#python, workerScript: WORKER_SCRIPT, spec, events, logger, spare });
  }

  /** The spare, if there is a live one, and the next spare started in its place. */
  #takeSpare(): ChildProcess | undefined {
    const spare = this.#spare;
    if (spare === undefined) return undefined;
    this.#spare = startSpareWorker(this.#python, WORKER_SCRIPT);
    return spareAlive(spare) ? spare : undefined;
  }

  taskCommand(entrypoint: string, args: readonly string[], env: Readonly<Record<string, string>>): TaskCommand {
    // -u: unbuffered, so that log lines stream as the task writes them.
    return { command: this.#python, args: ['-u', entrypoint, ...args], env: { PYTHONUNBUFFERED: '1', PYTHONPATH: userPythonPath(env) } };
  }
}
