import { spawn } from 'node:child_process';
import type { ChildProcess, ChildProcessByStdio } from 'node:child_process';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { BOUNDS } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { BoundedCapture, baseEnv, killGroup, openRunFile, signalGroup, withPrologue } from '@kruntimes/runtime-server-core';
import type { Logger } from 'pino';
import type { FunctionSpec, InvocationRequest, InvocationResult, LoadedFunction } from '@kruntimes/runtime-server-core';

/**
 * Waits for the invocation's first line (its ID and deadline), then sources the user's script
 * and calls the handler function with the payload on stdin. The process is started before
 * its invocation arrives and its group is guarded from the start, so a handler that kills
 * this process at once is still ended with it; at end of file instead (this process died
 * first, or the function was unregistered) no user code runs.
 */
const RUNNER =
  'IFS=" " read -r KRT_INVOCATION_ID KRT_DEADLINE || exit 125; export KRT_INVOCATION_ID KRT_DEADLINE; source -- "$1" </dev/null && "$2"';

/** A bash started for the next invocation, waiting for its first line. */
interface Prepared {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly outputsDir: string;
  readonly captured: Captured;
  readonly closed: Promise<Exit>;
}

/**
 * A Bash function: one `bash` process per invocation (there is no warm state worth
 * keeping in a shell), started once the previous invocation has ended, so that an
 * invocation does not wait for a process to start (measured: 3.9 of 6.0 ms). Result: stdout
 * as JSON, or as a JSON string when it is not JSON. Outputs: one file per key in
 * $KRT_OUTPUTS_DIR. Non-zero exit: FunctionFailed.
 */
export class BashFunction implements LoadedFunction {
  readonly #spec: FunctionSpec;
  readonly #script: string;
  readonly #handler: string;
  /** Every bash started and not yet ended: the prepared one and the one running. */
  readonly #live = new Set<ChildProcess>();
  #invocations = 0;
  #closed = false;
  /**
   * The next invocation's bash, started after the last invocation's end: what it left
   * running as the Run's user killed, its outputs removed (off the reply's path: a /proc
   * scan, directory removals and a process start). Undefined once closed.
   */
  #next: Promise<Prepared | undefined>;

  constructor(spec: FunctionSpec, script: string, handler: string) {
    this.#spec = spec;
    this.#script = script;
    this.#handler = handler;
    this.#next = this.#prepare();
  }

  async invoke(request: InvocationRequest): Promise<InvocationResult> {
    const prepared = await this.#ready();
    try {
      return await this.#run(request, prepared);
    } finally {
      this.#next = this.#end(request.logger, prepared).then(() => this.#prepare());
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Unregister returns once no process of the function is left; the sandbox's close
    // removes the directories.
    await Promise.all([...this.#live].map((child) => killGroup(child)));
  }

  /** The prepared bash, or a new one when it ended while waiting or could not be started. */
  async #ready(): Promise<Prepared> {
    const prepared = await this.#next.catch(() => undefined);
    if (prepared?.child.exitCode === null && prepared.child.signalCode === null) return prepared;
    if (prepared !== undefined) await rm(prepared.outputsDir, { recursive: true, force: true });
    const started = await this.#prepare();
    if (started === undefined) throw new KruntimesError('RegistrationNotFound', 'the function is being unregistered');
    return started;
  }

  /**
   * bash as the leader of its own group (detached), so that the whole invocation can be
   * killed; in the registration's sandbox, whose guard ends the group and removes the
   * directory if this process dies first.
   */
  async #prepare(): Promise<Prepared | undefined> {
    const { sandbox } = this.#spec;
    const outputsDir = await sandbox.privateDir(`outputs-${String(++this.#invocations)}`);
    if (this.#closed) return undefined;
    const child = spawn(
      'bash',
      ['--noprofile', '--norc', '-c', withPrologue(sandbox, RUNNER), 'krt-handler', this.#script, this.#handler],
      {
        cwd: this.#spec.workdir,
        ...sandbox.identity,
        env: {
          ...baseEnv(),
          ...sandbox.env,
          ...this.#spec.env,
          KRT_RUN_UID: this.#spec.runUid,
          KRT_ATTEMPT: String(this.#spec.attempt),
          KRT_OUTPUTS_DIR: outputsDir,
        },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    if (child.pid !== undefined) sandbox.guardGroup(child.pid);
    this.#live.add(child);
    const closed = new Promise<Exit>((resolve) => {
      child.once('close', (code, signal) => {
        this.#live.delete(child);
        resolve({ code, signal });
      });
    });
    // A handler that never reads stdin closes it early: EPIPE is not an error here.
    child.stdin.on('error', () => undefined);
    return { child, outputsDir, captured: capture(child), closed };
  }

  async #run(request: InvocationRequest, prepared: Prepared): Promise<InvocationResult> {
    const { child } = prepared;
    // The gate's line, then the payload (bash reads its line without reading past it).
    child.stdin.end(`${request.invocationId} ${String(Math.floor(request.deadline / 1000))}\n${request.payload}`);
    const ended = await closedWithin(prepared, request.timeoutMs);
    // What the handler left in its group ends before its outputs are read; what it left in
    // sessions of its own (walled: of its user) ends before the next invocation starts.
    signalGroup(child, 'SIGKILL');
    if (ended.timedOut) throw new KruntimesError('InvocationTimeout', `invocation did not finish within ${request.timeoutMs} ms`);
    return await this.#result(request, prepared.outputsDir, ended, prepared.captured);
  }

  /** Never rejects: the next invocation waits for it. */
  async #end(logger: Logger, prepared: Prepared): Promise<void> {
    try {
      if (!(await this.#spec.sandbox.endProcesses())) logger.warn('processes of the invocation survived SIGKILL');
      await rm(prepared.outputsDir, { recursive: true, force: true });
    } catch (error: unknown) {
      logger.warn({ err: error }, 'could not end the invocation cleanly');
    }
  }

  /** A non-zero exit is FunctionFailed; stdout over the bound FunctionOutputInvalid. */
  async #result(request: InvocationRequest, outputsDir: string, ended: Ended, captured: Captured): Promise<InvocationResult> {
    const { code, signal } = ended;
    const err = captured.stderr.result();
    if (code !== 0) {
      request.logger.info({ stderr: err }, 'failed invocation output');
      const tail = err.data.slice(-2048).trim();
      throw new KruntimesError(
        'FunctionFailed',
        `handler ${this.#handler} exited with ${signal ?? `code ${code ?? 'unknown'}`}${tail === '' ? '' : `: ${tail}`}`,
      );
    }
    const out = captured.stdout.result();
    if (out.totalBytes > BOUNDS.resultBytes) {
      throw new KruntimesError('FunctionOutputInvalid', `result is ${out.totalBytes} bytes, at most ${BOUNDS.resultBytes} allowed`);
    }
    return {
      result: toJsonResult(out.data),
      outputs: await readOutputsDir(outputsDir, this.#spec.sandbox.identity?.uid),
      stdout: {
        data: out.data.slice(0, BOUNDS.capturedStreamBytes),
        truncated: out.totalBytes > BOUNDS.capturedStreamBytes,
        totalBytes: out.totalBytes,
      },
      stderr: err,
    };
  }
}

interface Captured {
  stdout: BoundedCapture;
  stderr: BoundedCapture;
}

interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

interface Ended extends Exit {
  /** The deadline passed and the group was killed. */
  readonly timedOut: boolean;
}

function capture(child: ChildProcessByStdio<Writable, Readable, Readable>): Captured {
  // One byte over the bound is enough to know the result is too large.
  const stdout = new BoundedCapture(BOUNDS.resultBytes + 1);
  const stderr = new BoundedCapture(BOUNDS.capturedStreamBytes);
  child.stdout.on('data', (chunk: Buffer) => {
    stdout.write(chunk);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr.write(chunk);
  });
  return { stdout, stderr };
}

/** Waits for the process's pipes to close, killing its group at the deadline. */
async function closedWithin(prepared: Prepared, timeoutMs: number): Promise<Ended> {
  const deadline = { passed: false };
  const timer = setTimeout(() => {
    deadline.passed = true;
    signalGroup(prepared.child, 'SIGKILL');
  }, timeoutMs);
  const exit = await prepared.closed;
  clearTimeout(timer);
  return { ...exit, timedOut: deadline.passed };
}

/** stdout as JSON when it is JSON, else as a JSON string; empty is null. */
export function toJsonResult(stdout: string): string {
  const text = stdout.trim();
  if (text === '') return 'null';
  try {
    JSON.parse(text);
    return text;
  } catch {
    return JSON.stringify(stdout.replace(/\n$/, ''));
  }
}

/** Outputs written as files; read bounded (the core validates keys and sizes). */
async function readOutputsDir(dir: string, owner: number | undefined): Promise<Record<string, string>> {
  const names = await readdir(dir);
  if (names.length > BOUNDS.outputCount) {
    throw new KruntimesError('FunctionOutputInvalid', `${names.length} outputs, at most ${BOUNDS.outputCount} allowed`);
  }
  const outputs: Record<string, string> = {};
  for (const name of names) {
    const file = await openRunFile(join(dir, name), owner).catch((error: unknown) => {
      throw new KruntimesError('FunctionOutputInvalid', `output ${name}: ${(error as Error).message}`);
    });
    try {
      const buffer = Buffer.alloc(BOUNDS.outputValueBytes + 1);
      const { bytesRead } = await file.read(buffer, 0, buffer.byteLength, 0);
      if (bytesRead > BOUNDS.outputValueBytes)
        throw new KruntimesError('FunctionOutputInvalid', `output ${name} exceeds ${BOUNDS.outputValueBytes} bytes`);
      outputs[name] = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await file.close();
    }
  }
  return outputs;
}
