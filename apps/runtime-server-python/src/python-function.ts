import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { BOUNDS, OUTPUT_KEY_PATTERN } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { LineSplitter, baseEnv, guard, killGroup, sandboxCommand, signalGroup } from '@kruntimes/runtime-server-core';
import type {
  FunctionEvents,
  FunctionSpec,
  Guard,
  InvocationRequest,
  InvocationResult,
  LoadedFunction,
} from '@kruntimes/runtime-server-core';
import type { Logger } from 'pino';
import { userPythonPath } from './helper-module.ts';
import { JsonLineReader } from './worker-protocol.ts';
import type { ReadyMessage, ResponseMessage } from './worker-protocol.ts';

/** A response holds at most a 1 MiB result and two 64 KiB captures, JSON-escaped. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** Lines the worker writes to its real fds 1 and 2 are logged up to this size. */
const WORKER_LOG_LINE_BYTES = 4 * 1024;

const LIMITS = JSON.stringify({
  capturedStreamBytes: BOUNDS.capturedStreamBytes,
  resultBytes: BOUNDS.resultBytes,
  outputCount: BOUNDS.outputCount,
  outputKeyBytes: BOUNDS.outputKeyBytes,
  outputValueBytes: BOUNDS.outputValueBytes,
  outputKeyPattern: OUTPUT_KEY_PATTERN,
});

interface Worker {
  readonly child: ChildProcess;
  readonly requests: Writable;
  /** Kills the worker's group if this process dies first; released once this process killed it. */
  readonly guarded: Guard | undefined;
  /** Set while we stop the worker on purpose; its exit is then not a fatal error. */
  expectedExit: boolean;
  /** Sent its ready message: from then on, dying on its own is a fatal error. */
  ready: boolean;
  /** The caller waiting for the next message. */
  waiting: { resolve: (message: unknown) => void; reject: (error: KruntimesError) => void } | undefined;
}

export interface PythonFunctionOptions {
  readonly python: string;
  readonly workerScript: string;
  readonly spec: FunctionSpec;
  readonly events: FunctionEvents;
  readonly logger: Logger;
  /** A spare worker (startSpareWorker) to assign instead of starting an interpreter; restarts start cold. */
  readonly spare?: ChildProcess | undefined;
}

/**
 * A worker started ahead of any registration (`krt_worker.py --spare`): the interpreter
 * and the worker's imports are paid before a registration needs them. It starts with the
 * base environment, the one a cold start gets before the registration's additions, which
 * its assignment then brings (see `assigned` in krt_worker.py). Unreferenced until used,
 * so an unused spare never keeps the server alive; it exits when the server does (its
 * fd 3 closes).
 */
export function startSpareWorker(python: string, workerScript: string): ChildProcess {
  const child = spawn(python, ['-u', workerScript, '--spare', LIMITS], {
    cwd: '/',
    env: baseEnv(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
  });
  // A spare that cannot start is simply not used (see spareAlive).
  child.on('error', () => undefined);
  setReferenced(child, false);
  return child;
}

/** Whether a spare can still be assigned: started, and not exited. */
export function spareAlive(child: ChildProcess): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null;
}

/** Environment variables read when the interpreter starts, which a spare started without: such a registration starts cold. */
export function needsColdStart(env: Readonly<Record<string, string>>): boolean {
  return Object.keys(env).some((name) => (name.startsWith('PYTHON') && name !== 'PYTHONPATH') || name.startsWith('LC_') || name === 'LANG');
}

function setReferenced(child: ChildProcess, referenced: boolean): void {
  for (const stream of [child, ...child.stdio]) {
    const handle = stream as { ref?: () => void; unref?: () => void } | null;
    if (referenced) handle?.ref?.();
    else handle?.unref?.();
  }
}

/**
 * One registration's warm worker. After an invocation timeout the worker is killed
 * (with its process group) and a fresh one imports the module again: the registration
 * ID and its activity clock are unchanged, in-memory module state is not kept. A
 * worker that dies on its own makes the registration fail fatally.
 */
export class PythonFunction implements LoadedFunction {
  readonly #options: PythonFunctionOptions;
  #worker: Worker | undefined;
  /** Resolves when a worker is ready; replaced on restart. */
  #ready: Promise<Worker>;
  #closed = false;

  private constructor(options: PythonFunctionOptions) {
    this.#options = options;
    this.#ready = this.#startWorker(options.spare);
  }

  static async start(options: PythonFunctionOptions): Promise<PythonFunction> {
    const loaded = new PythonFunction(options);
    try {
      await loaded.#ready;
    } catch (error) {
      await loaded.close();
      throw error;
    }
    return loaded;
  }

  async invoke(request: InvocationRequest): Promise<InvocationResult> {
    const worker = await this.#ready;
    const response = this.#next(worker);
    worker.requests.write(`${JSON.stringify({ id: request.invocationId, payload: request.payload, deadline: request.deadline / 1000 })}\n`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        resolve('timeout');
      }, request.timeoutMs);
    });
    const outcome = await Promise.race([response, timeout]).finally(() => {
      clearTimeout(timer);
    });
    if (outcome === 'timeout') {
      request.logger.warn({ timeoutMs: request.timeoutMs }, 'invocation timed out; restarting the worker');
      await this.#restart(worker);
      throw new KruntimesError('InvocationTimeout', `invocation did not finish within ${request.timeoutMs} ms`);
    }
    return toResult(outcome as ResponseMessage, request.logger);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (worker === undefined) return;
    await this.#kill(worker, new KruntimesError('RegistrationNotFound', 'the registration was released during the invocation'));
  }

  async #restart(worker: Worker): Promise<void> {
    await this.#kill(worker, new KruntimesError('InvocationTimeout', 'invocation timed out'));
    if (this.#closed) return;
    this.#options.events.restarted();
    this.#ready = this.#startWorker();
    // The next invocation waits for the new worker; a failed restart is fatal.
    this.#ready.catch((error: unknown) => {
      this.#options.events.fatal(new KruntimesError('RegistrationLost', `worker restart failed: ${(error as Error).message}`));
    });
  }

  async #kill(worker: Worker, reason: KruntimesError): Promise<void> {
    worker.expectedExit = true;
    worker.waiting?.reject(reason);
    worker.waiting = undefined;
    // Unregister and the restart after a timeout return once no process of the worker is left,
    // in its group or (walled) of its user.
    await killGroup(worker.child);
    if (!(await this.#options.spec.sandbox.endProcesses())) this.#options.logger.warn('processes of the worker survived SIGKILL');
    worker.guarded?.release();
  }

  #next(worker: Worker): Promise<unknown> {
    return new Promise((resolve, reject) => {
      worker.waiting = { resolve, reject };
    });
  }

  async #startWorker(spare?: ChildProcess): Promise<Worker> {
    const { spec, logger } = this.#options;
    // What the worker's environment gets on top of the base environment.
    const env = { ...spec.env, PYTHONPATH: userPythonPath(spec.env), KRT_RUN_UID: spec.runUid, KRT_ATTEMPT: String(spec.attempt) };
    const child = spare ?? this.#spawnWorker(env);
    if (spare !== undefined) setReferenced(spare, true);
    // A worker busy in an invocation would not notice this process's death (its fd 3
    // closing) until the handler returns, nor would what the handler started: its guard
    // kills the whole group then. (An unassigned spare exits when fd 3 closes.)
    const guarded = child.pid === undefined ? undefined : guard({ killGroup: child.pid });
    const worker: Worker = {
      child,
      requests: child.stdio[3] as Writable,
      guarded,
      expectedExit: false,
      ready: false,
      waiting: undefined,
    };
    this.#worker = worker;
    const ready = this.#next(worker);

    const reader = new JsonLineReader(MAX_MESSAGE_BYTES);
    (child.stdio[4] as Readable).on('data', (chunk: Buffer) => {
      try {
        for (const message of reader.push(chunk)) {
          const waiting = worker.waiting;
          worker.waiting = undefined;
          if (waiting === undefined) throw new Error('unexpected message from the worker');
          waiting.resolve(message);
        }
      } catch (error) {
        this.#protocolError(worker, error as Error);
      }
    });
    // Writes to a worker that just died fail with EPIPE; the exit handler reports it.
    worker.requests.on('error', (error) => {
      logger.debug({ err: error }, 'worker request pipe error');
    });
    for (const [stream, name] of [
      [child.stdout, 'stdout'],
      [child.stderr, 'stderr'],
    ] as const) {
      const splitter = new LineSplitter(WORKER_LOG_LINE_BYTES);
      stream?.on('data', (chunk: Buffer) => {
        for (const line of splitter.push(chunk)) logger.info({ stream: name, truncated: line.truncated }, line.text);
      });
    }
    child.on('error', (error) => {
      this.#died(worker, `cannot start ${this.#options.python}: ${error.message}`);
    });
    child.on('exit', (code, signal) => {
      this.#died(worker, `python worker exited (${signal === null ? `code ${code ?? 'unknown'}` : `signal ${signal}`})`);
    });
    if (spare !== undefined) {
      worker.requests.write(`${JSON.stringify({ workdir: spec.workdir, handler: spec.handler, env, pythonpath: env.PYTHONPATH })}\n`);
    }

    let message: ReadyMessage;
    try {
      message = (await ready) as ReadyMessage;
    } catch (error) {
      throw new KruntimesError('FunctionFailed', `cannot load handler ${spec.handler}: ${(error as Error).message}`, { cause: error });
    }
    if (!message.ready) {
      worker.expectedExit = true;
      signalGroup(child, 'SIGKILL');
      throw new KruntimesError('FunctionFailed', `cannot load handler ${spec.handler}:\n${message.error}`);
    }
    worker.ready = true;
    logger.info({ pid: child.pid }, 'python worker ready');
    return worker;
  }

  /** A cold worker, as the registration's user in its sandbox. */
  #spawnWorker(env: Readonly<Record<string, string>>): ChildProcess {
    const { spec } = this.#options;
    const { sandbox } = spec;
    const worker = sandboxCommand(sandbox, this.#options.python, ['-u', this.#options.workerScript, spec.workdir, spec.handler, LIMITS]);
    return spawn(worker.command, worker.args, {
      cwd: spec.workdir,
      env: { ...baseEnv(), ...sandbox.env, ...env },
      ...sandbox.identity,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
  }

  #died(worker: Worker, message: string): void {
    if (worker.expectedExit) return;
    worker.expectedExit = true;
    const error = new KruntimesError('RegistrationLost', message);
    const waiting = worker.waiting;
    worker.waiting = undefined;
    waiting?.reject(error);
    // Before its ready message this is a load failure, reported by whoever started it.
    if (worker.ready) this.#options.events.fatal(error);
  }

  #protocolError(worker: Worker, error: Error): void {
    this.#options.logger.error({ err: error }, 'worker protocol error');
    this.#died(worker, `worker protocol error: ${error.message}`);
    signalGroup(worker.child, 'SIGKILL');
  }
}

function toResult(response: ResponseMessage, logger: Logger): InvocationResult {
  if (response.ok) return response;
  // Captured output of a failed invocation goes to the log; the error carries the summary.
  logger.info({ stdout: response.stdout, stderr: response.stderr }, 'failed invocation output');
  switch (response.kind) {
    case 'raised':
      return fail('FunctionFailed', response.message);
    case 'result_invalid':
    case 'result_too_large':
      return fail('FunctionOutputInvalid', response.message);
    case 'bad_payload':
      return fail('InvalidRequest', response.message);
  }
}

function fail(code: 'FunctionFailed' | 'FunctionOutputInvalid' | 'InvalidRequest', message: string): never {
  throw new KruntimesError(code, message);
}
