import { spawn } from 'node:child_process';
import type { ChildProcess, ChildProcessByStdio } from 'node:child_process';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { BOUNDS } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { BoundedCapture, baseEnv, killGroup, openRunFile, signalGroup, withPrologue } from '@kruntimes/runtime-server-core';
import type { FunctionSpec, InvocationRequest, InvocationResult, LoadedFunction, RunSandbox } from '@kruntimes/runtime-server-core';

/**
 * Sources the user's script, then calls the handler function with the payload on stdin; only
 * once a first line (before the payload) arrives: it is sent once the guard knows the
 * invocation's group, so a handler that kills this process at once is still ended with it.
 * At end of file instead (this process died first) no user code runs.
 */
const RUNNER = 'read -r _ || exit 125; source -- "$1" </dev/null && "$2"';

/**
 * A Bash function: one `bash` process per invocation (there is no warm state worth
 * keeping in a shell). Result: stdout as JSON, or as a JSON string when it is not JSON.
 * Outputs: one file per key in $KRT_OUTPUTS_DIR. Non-zero exit: FunctionFailed.
 */
export class BashFunction implements LoadedFunction {
  readonly #spec: FunctionSpec;
  readonly #script: string;
  readonly #handler: string;
  #running: ChildProcess | undefined;
  #invocations = 0;

  constructor(spec: FunctionSpec, script: string, handler: string) {
    this.#spec = spec;
    this.#script = script;
    this.#handler = handler;
  }

  async invoke(request: InvocationRequest): Promise<InvocationResult> {
    const { sandbox } = this.#spec;
    // In the registration's sandbox, whose guard ends the invocation's group and removes the
    // directory if this process dies first.
    const outputsDir = await sandbox.privateDir(`outputs-${String(++this.#invocations)}`);
    try {
      return await this.#run(request, outputsDir, sandbox);
    } finally {
      await rm(outputsDir, { recursive: true, force: true });
    }
  }

  async close(): Promise<void> {
    const child = this.#running;
    if (child === undefined) return;
    // Unregister returns once no process of the invocation is left.
    await killGroup(child);
  }

  async #run(request: InvocationRequest, outputsDir: string, sandbox: RunSandbox): Promise<InvocationResult> {
    const child = this.#spawn(request, outputsDir);
    if (child.pid !== undefined) sandbox.guardGroup(child.pid);
    this.#running = child;
    const captured = capture(child);
    // A handler that never reads stdin closes it early: EPIPE is not an error here.
    child.stdin.on('error', () => undefined);
    // The gate's line, then the payload (bash reads its line without reading past it).
    child.stdin.end(`\n${request.payload}`);
    const ended = await closedWithin(child, request.timeoutMs);
    this.#running = undefined;
    // Whatever the handler left running, in its group or (walled) of its user, ends with the
    // invocation, before its outputs are read.
    signalGroup(child, 'SIGKILL');
    if (!(await sandbox.endProcesses())) request.logger.warn('processes of the invocation survived SIGKILL');
    if (ended.timedOut) throw new KruntimesError('InvocationTimeout', `invocation did not finish within ${request.timeoutMs} ms`);
    return await this.#result(request, outputsDir, ended, captured);
  }

  /** bash as the leader of its own group (detached), so that the whole invocation can be killed. */
  #spawn(request: InvocationRequest, outputsDir: string): ChildProcessByStdio<Writable, Readable, Readable> {
    const { sandbox } = this.#spec;
    return spawn('bash', ['--noprofile', '--norc', '-c', withPrologue(sandbox, RUNNER), 'krt-handler', this.#script, this.#handler], {
      cwd: this.#spec.workdir,
      ...sandbox.identity,
      env: {
        ...baseEnv(),
        ...sandbox.env,
        ...this.#spec.env,
        KRT_RUN_UID: this.#spec.runUid,
        KRT_ATTEMPT: String(this.#spec.attempt),
        KRT_INVOCATION_ID: request.invocationId,
        KRT_DEADLINE: String(Math.floor(request.deadline / 1000)),
        KRT_OUTPUTS_DIR: outputsDir,
      },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
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

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The deadline passed and the group was killed. */
  timedOut: boolean;
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
async function closedWithin(child: ChildProcess, timeoutMs: number): Promise<Ended> {
  const deadline = { passed: false };
  const timer = setTimeout(() => {
    deadline.passed = true;
    signalGroup(child, 'SIGKILL');
  }, timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    child.once('close', (c, s) => {
      resolve([c, s]);
    });
  });
  clearTimeout(timer);
  return { code, signal, timedOut: deadline.passed };
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
