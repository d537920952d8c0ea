import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import type { ChildProcess, ChildProcessByStdio } from 'node:child_process';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { BOUNDS, isUid, isValidInvocationId, utf8ByteLength } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import type { TaskCommand } from './adapter.ts';
import type { ExecuteRequest } from './execute-request.ts';
import { baseEnv } from './process-env.ts';
import { RESUME_ENV_NAMES, resumeProblems } from './resume-files.ts';
import type { RunSandbox } from './run-wall.ts';

/** A task's process: stdin its gate (see `openGate`), stdout and stderr piped. */
export type TaskProcess = ChildProcessByStdio<Writable, Readable, Readable>;

/**
 * Runs the task's command (with stdin closed, as a task has it) only once a line arrives on
 * stdin, in the same process (exec: the pid and group stay): the Runtime Server sends it once
 * its guard knows the task's group, so a task that kills the Runtime Server at once is still
 * ended with it. At end of file instead (the Runtime Server died first) the task never runs.
 */
const GATE = 'read -r _ || exit 125; exec "$@" </dev/null';

/** A shell script behind the sandbox's prologue (umask, per-uid limits), which runs as the Run's user. */
export function withPrologue(sandbox: Pick<RunSandbox, 'prologue'>, script: string): string {
  return sandbox.prologue === '' ? script : `${sandbox.prologue} ${script}`;
}

/** Lets the task's command run: call once the task's group is guarded. */
export function openGate(child: TaskProcess): void {
  // A gate whose process already died (killed, the Runtime Server stopping it) has nobody to read it.
  child.stdin.on('error', () => undefined);
  child.stdin.end('\n');
}

/**
 * The task's process, leader of its own group (detached) so that it can be stopped
 * whole, as the sandbox's user in its workdir (`request.workdir`). `platformEnv`: the
 * artifacts endpoint and a continuation's resume variables.
 */
export function spawnTask(
  command: TaskCommand,
  request: ExecuteRequest,
  outputsFile: string,
  platformEnv: Readonly<Record<string, string>>,
  sandbox: RunSandbox,
): TaskProcess {
  const env: Record<string, string> = {
    ...baseEnv(),
    ...sandbox.env,
    ...request.env,
    ...command.env,
    KRT_RUN_UID: request.runUid,
    KRT_ATTEMPT: String(request.attempt),
    KRT_EXECUTION_ID: request.executionId,
    KRT_OUTPUTS_FILE: outputsFile,
  };
  // Only a continuation has them: a Run's own env cannot make a first attempt look resumed.
  for (const name of RESUME_ENV_NAMES) Reflect.deleteProperty(env, name);
  return spawn('/bin/sh', ['-c', withPrologue(sandbox, GATE), 'krt-task', command.command, ...command.args], {
    cwd: request.workdir,
    env: { ...env, ...platformEnv },
    ...sandbox.identity,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/**
 * Why the task's command cannot start, or undefined. The gate (a shell) starts whatever the
 * command is, so a missing interpreter would otherwise look like the task's own exit 127:
 * this keeps it a `start_failed` with a message that names what is missing.
 */
export function commandProblem(command: TaskCommand, request: ExecuteRequest): string | undefined {
  const path = command.env?.PATH ?? request.env.PATH ?? baseEnv().PATH ?? '';
  const candidates = command.command.includes('/')
    ? [resolve(request.workdir, command.command)]
    : path
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(resolve(request.workdir, dir), command.command));
  return candidates.some(isExecutable) ? undefined : `cannot start ${command.command}: not found or not executable (PATH ${path})`;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Undefined once the process has started; the error when it could not. */
export function spawned(child: ChildProcess): Promise<Error | undefined> {
  return new Promise<Error | undefined>((resolve) => {
    child.once('spawn', () => {
      resolve(undefined);
    });
    child.once('error', resolve);
  });
}

export function validateExecute(request: ExecuteRequest): string {
  const problems: string[] = [];
  if (!isValidInvocationId(request.executionId)) problems.push('execution_id must be 1-128 bytes of visible ASCII');
  if (!isUid(request.runUid)) problems.push('run_uid must be a Kubernetes UID');
  if (!isAbsolute(request.workdir)) problems.push('workdir must be an absolute path');
  const entrypoint = resolve(request.workdir, request.entrypoint);
  const inside = relative(request.workdir, entrypoint);
  if (request.entrypoint === '' || inside.startsWith('..') || isAbsolute(inside)) problems.push('entrypoint must be a path inside workdir');
  if (Object.keys(request.env).length > BOUNDS.envCount) problems.push(`at most ${BOUNDS.envCount} env entries`);
  if (Object.values(request.env).some((value) => utf8ByteLength(value) > BOUNDS.envValueBytes)) {
    problems.push(`env values must be at most ${BOUNDS.envValueBytes} bytes`);
  }
  if (request.resume !== undefined) problems.push(...resumeProblems(request.resume, request.attempt));
  if (problems.length > 0) throw new KruntimesError('InvalidRequest', problems.join('; '));
  return entrypoint;
}

export async function withTimeout(promise: Promise<unknown>, ms: number, onTimeout: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      resolve('timeout');
    }, ms);
  });
  const outcome = await Promise.race([promise.then(() => 'done' as const), expired]);
  clearTimeout(timer);
  if (outcome === 'timeout') onTimeout();
}

/**
 * `command args` behind the sandbox's prologue (umask, per-uid limits): through a shell
 * that execs it (same pid) when the sandbox has one, as is otherwise.
 */
export function sandboxCommand(
  sandbox: Pick<RunSandbox, 'prologue'>,
  command: string,
  args: readonly string[],
): { command: string; args: string[] } {
  if (sandbox.prologue === '') return { command, args: [...args] };
  return { command: '/bin/sh', args: ['-c', withPrologue(sandbox, 'exec "$@"'), 'krt-run', command, ...args] };
}
