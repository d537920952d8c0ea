import type { ChildProcess } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { DEFAULTS, isUid } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import type { LanguageAdapter, TaskCommand } from './adapter.ts';
import type { ArtifactClaim } from './artifact-claims.ts';
import type { ArtifactAccess, ArtifactEndpoint, ArtifactSession } from './artifact-endpoint.ts';
import type { Clock } from './clock.ts';
import { EventQueue } from './event-queue.ts';
import { ExecutionRecord } from './execution-record.ts';
import type { ExecutionStatus } from './execution-record.ts';
import type { ExecuteRequest } from './execute-request.ts';
import { LineSplitter } from './line-splitter.ts';
import { readOutputs } from './outputs-file.ts';
import { GROUP_GONE_BOUND_MS, exited, killGroupUntilGone, signalGroup, terminateGroup } from './process-group.ts';
import { writeResumeFiles } from './resume-files.ts';
import type { RunSandbox, RunWall } from './run-wall.ts';
import { commandProblem, openGate, spawnTask, spawned, validateExecute, withTimeout } from './task-process.ts';
import type { TaskProcess } from './task-process.ts';
import type { SessionHooks } from './wait-for-input.ts';

export type { ExecuteRequest } from './execute-request.ts';

/** A task log line longer than this is cut (and flagged). */
export const LOG_LINE_BYTES = 16 * 1024;
/** Events buffered for a slow Execute stream before the process's pipes are paused. */
const QUEUE_HIGH_WATER = 256;
/** How long to wait for the pipes to close after the process group is gone. */
const PIPE_CLOSE_MS = 2_000;
/** How long a waiting execution's group may take to be gone before its exit is reported anyway. */
const WAITING_GROUP_GONE_MS = 10_000;

/** `waiting_input`: runtimed recorded the execution's wait for input, and the group was ended. */
export type ExitReason = 'completed' | 'cancelled' | 'timed_out' | 'start_failed' | 'waiting_input';

export type ExecutionEvent =
  | { readonly kind: 'started'; readonly pid: number; readonly time: number }
  | {
      readonly kind: 'log';
      readonly stream: 'stdout' | 'stderr';
      readonly text: string;
      readonly truncated: boolean;
      readonly time: number;
    }
  | {
      readonly kind: 'exited';
      readonly reason: ExitReason;
      readonly exitCode: number;
      readonly signal: string;
      readonly outputs: Readonly<Record<string, string>>;
      readonly outputsError: string;
      readonly message: string;
      /** The ResultManifest the execution recorded (empty without artifacts). */
      readonly manifest: readonly ArtifactClaim[];
      readonly time: number;
    };

interface Running {
  readonly child: ChildProcess;
  readonly graceMs: number;
  /**
   * Set by the first of cancel, timeout and client abort; decides the exit reason.
   * `waiting_input` overrides them all: once runtimed recorded the wait, that is how the attempt ended.
   */
  stopReason: 'cancelled' | 'timed_out' | 'waiting_input' | undefined;
  /** Why it was stopped, for the `exited` message (empty: it ended by itself). */
  stopMessage: string;
  stopping: Promise<void> | undefined;
}

export interface ExecutionServiceOptions {
  readonly adapter: LanguageAdapter;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Endings remembered for `status` (default: EXECUTION_RECORD_CAPACITY). */
  readonly recordCapacity?: number;
  /** How long an ending is remembered (default: EXECUTION_RECORD_RETENTION_MS). */
  readonly recordRetentionMs?: number;
  /** The local artifacts endpoint; without it an execution with artifacts is refused. */
  readonly artifacts?: ArtifactEndpoint;
  /** Where each execution runs, as which user. */
  readonly wall: RunWall;
}

/** Task executions: one process group each, streamed logs, bounded outputs, cancel. */
export class ExecutionService {
  readonly #running = new Map<string, Running>();
  readonly #adapter: LanguageAdapter;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #record: ExecutionRecord;
  readonly #artifacts: ArtifactEndpoint | undefined;
  readonly #wall: RunWall;

  constructor(options: ExecutionServiceOptions) {
    this.#wall = options.wall;
    this.#adapter = options.adapter;
    this.#logger = options.logger;
    this.#clock = options.clock;
    this.#artifacts = options.artifacts;
    this.#record = new ExecutionRecord({
      clock: options.clock,
      ...(options.recordCapacity === undefined ? {} : { capacity: options.recordCapacity }),
      ...(options.recordRetentionMs === undefined ? {} : { retentionMs: options.recordRetentionMs }),
    });
  }

  /**
   * What became of a task attempt's execution: running, exited (what its stream ends or
   * would have ended with, whether or not a client was still there) or unknown.
   */
  status(runUid: string, attempt: number): ExecutionStatus {
    const problems: string[] = [];
    if (!isUid(runUid)) problems.push('run_uid must be a Kubernetes UID');
    if (!Number.isInteger(attempt) || attempt < 1) problems.push('attempt must be at least 1');
    if (problems.length > 0) throw new KruntimesError('InvalidRequest', problems.join('; '));
    return this.#record.get(runUid, attempt);
  }

  /**
   * Runs a task and yields its events, ending with exactly one `exited`. Aborting
   * `signal` (the client went away) cancels the execution.
   */
  async *execute(request: ExecuteRequest, signal: AbortSignal): AsyncGenerator<ExecutionEvent> {
    const entrypoint = validateExecute(request);
    if (this.#running.has(request.executionId)) {
      throw new KruntimesError('InvalidRequest', `execution ${request.executionId} is already running`);
    }
    const logger = this.#logger.child({ runUid: request.runUid, attempt: request.attempt, executionId: request.executionId });
    const missing = await stat(entrypoint).then(
      (s) => (s.isFile() ? undefined : `${request.entrypoint} is not a file`),
      () => `${request.entrypoint} does not exist in the workdir`,
    );
    if (missing !== undefined) {
      yield this.#end(request, this.#exited('start_failed', -1, '', {}, '', missing, []));
      return;
    }
    // The execution's own directories (and, walled, its own user); neither they nor its
    // processes outlive this process, however it ends (the sandbox's guard).
    const sandbox = await this.#wall.open(request.workdir, 'exec');
    const inSandbox = { ...request, workdir: sandbox.workdir };
    const outputsFile = join(sandbox.outDir, 'outputs.json');
    try {
      const resumeEnv =
        request.resume === undefined ? {} : await writeResumeFiles(sandbox.inDir, request.resume, (path) => sandbox.shareReadOnly(path));
      if (request.resume !== undefined) {
        logger.info({ resumedFromAttempt: request.resume.checkpointAttempt, responseId: request.resume.responseId }, 'continuation');
      }
      const task = join(sandbox.workdir, relative(request.workdir, entrypoint));
      yield* this.#run(inSandbox, task, outputsFile, resumeEnv, signal, logger, sandbox);
    } finally {
      await sandbox.close();
    }
  }

  /** Starts stopping an execution; false when none is running under this ID. */
  cancel(executionId: string, graceMs: number | undefined): boolean {
    const running = this.#running.get(executionId);
    if (running === undefined) return false;
    this.#stop(running, 'cancelled', graceMs);
    return true;
  }

  /** How many executions run now. */
  get running(): number {
    return this.#running.size;
  }

  /** Cancels everything (server shutdown) and waits until the processes are gone. */
  async close(): Promise<void> {
    await Promise.all(
      [...this.#running.values()].map(async (running) => {
        this.#stop(running, 'cancelled', undefined);
        await running.stopping;
      }),
    );
  }

  async *#run(
    request: ExecuteRequest,
    entrypoint: string,
    outputsFile: string,
    resumeEnv: Readonly<Record<string, string>>,
    signal: AbortSignal,
    logger: Logger,
    sandbox: RunSandbox,
  ): AsyncGenerator<ExecutionEvent> {
    const command = this.#adapter.taskCommand(entrypoint, request.args, request.env);
    const unstartable = commandProblem(command, request);
    if (unstartable !== undefined) {
      yield this.#end(request, this.#exited('start_failed', -1, '', {}, '', unstartable, []));
      return;
    }
    const { session, child, manifest, running } = this.#spawn(request, command, outputsFile, resumeEnv, logger, sandbox);
    const spawnError = await spawned(child);
    if (spawnError !== undefined || child.pid === undefined) {
      session?.close();
      yield this.#end(
        request,
        this.#exited('start_failed', -1, '', {}, '', `cannot start ${command.command}: ${spawnError?.message ?? 'no pid'}`, []),
      );
      return;
    }
    const startedAt = this.#started(request, child.pid, running, logger);

    const queue = new EventQueue<ExecutionEvent>(QUEUE_HIGH_WATER);
    const pipesClosed = Promise.all([this.#pipeLines(child.stdout, 'stdout', queue), this.#pipeLines(child.stderr, 'stderr', queue)]);
    const triggers = this.#stopTriggers(running, request.timeoutMs, signal);
    const done = this.#ended(child, running, pipesClosed, queue, triggers);
    // The ending is recorded as soon as it is known, whether or not a client is still
    // there to receive it: a stream that breaks now is settled by `status`.
    const ending = done.then(() => this.#exitedEvent(request, running, manifest, outputsFile, logger, sandbox));
    yield* this.#stream(request, running, { kind: 'started', pid: child.pid, time: startedAt }, queue, ending, triggers);
  }

  /**
   * Opens the execution's artifacts session (if any) and spawns its process. `manifest`
   * resolves with what the session recorded once the process has exited.
   */
  #spawn(
    request: ExecuteRequest,
    command: TaskCommand,
    outputsFile: string,
    resumeEnv: Readonly<Record<string, string>>,
    logger: Logger,
    sandbox: RunSandbox,
  ): {
    session: ArtifactSession | undefined;
    child: TaskProcess;
    manifest: Promise<readonly ArtifactClaim[]>;
    running: Running;
  } {
    // The session exists before the process (its env), the process before `running`.
    const started: { running?: Running } = {};
    const session = this.#openArtifacts(request.artifacts, logger, {
      waiting: (attempt) => {
        if (started.running !== undefined) this.#waiting(started.running, attempt);
      },
      answered: () => {
        if (started.running !== undefined) this.#endWaiting(started.running);
      },
    });
    let child: TaskProcess;
    try {
      child = spawnTask(command, request, outputsFile, { ...session?.env, ...resumeEnv }, sandbox);
    } catch (error) {
      session?.close();
      throw error;
    }
    // Before the task's command runs (its gate opens only now): the group must not outlive
    // this process, however it ends, even when the task kills this process at once.
    if (child.pid !== undefined) {
      sandbox.guardGroup(child.pid);
      openGate(child);
    }
    // The token stops working the moment the task's process exits: nothing of the
    // execution may record or ask for grants after that. A wait for input already at
    // runtimed is let finish: its answer decides how the attempt ended.
    const manifest = exited(child).then(async () => {
      const entries = session?.close() ?? [];
      await session?.settled();
      return entries;
    });
    const running: Running = {
      child,
      graceMs: request.graceMs ?? DEFAULTS.cancelGracePeriodSeconds * 1000,
      stopReason: undefined,
      stopMessage: '',
      stopping: undefined,
    };
    started.running = running;
    return { session, child, manifest, running };
  }

  /** The process runs: it is cancellable and recorded for `status`. Returns when it started. */
  #started(request: ExecuteRequest, pid: number, running: Running, logger: Logger): number {
    const startedAt = this.#clock();
    this.#running.set(request.executionId, running);
    this.#record.started(request.runUid, request.attempt, request.executionId, pid, startedAt);
    logger.info({ pid, entrypoint: request.entrypoint }, 'execution started');
    return startedAt;
  }

  /** Once the task is done: how it ended, with its outputs and artifacts, recorded and as the `exited` event. */
  async #exitedEvent(
    request: ExecuteRequest,
    running: Running,
    manifest: Promise<readonly ArtifactClaim[]>,
    outputsFile: string,
    logger: Logger,
    sandbox: RunSandbox,
  ): Promise<ExecutionEvent> {
    const { child } = running;
    const entries = await manifest;
    if (running.stopReason === 'waiting_input') await this.#waitingGroupGone(running, logger);
    // Nothing of the Run outlives it (a walled Run's `setsid` children included), and nothing
    // of it rewrites the outputs once they are read.
    if (!(await sandbox.endProcesses())) logger.warn('processes of the ended execution survived SIGKILL');
    const reason: ExitReason = running.stopReason ?? 'completed';
    const outputs = await readOutputs(outputsFile, sandbox.identity?.uid).catch((error: unknown) => ({
      outputs: {},
      error: `cannot read the outputs file: ${(error as Error).message}`,
    }));
    logger.info(
      { reason, exitCode: child.exitCode, signal: child.signalCode, outputsError: outputs.error, artifacts: entries.length },
      'execution ended',
    );
    return this.#end(
      request,
      this.#exited(reason, child.exitCode ?? -1, child.signalCode ?? '', outputs.outputs, outputs.error, running.stopMessage, entries),
    );
  }

  /**
   * The events to the client: `started`, the logs, then the `exited` event. However the
   * stream ends, the process does not outlive it and the execution is no longer running.
   */
  async *#stream(
    request: ExecuteRequest,
    running: Running,
    started: ExecutionEvent,
    queue: EventQueue<ExecutionEvent>,
    ending: Promise<ExecutionEvent>,
    triggers: StopTriggers,
  ): AsyncGenerator<ExecutionEvent> {
    const { child } = running;
    try {
      yield started;
      yield* queue.drain();
      yield await ending;
    } finally {
      triggers.release();
      if (child.exitCode === null && child.signalCode === null) {
        // The consumer stopped early: never leave the process behind.
        this.#stop(running, 'cancelled', 0, 'stopped because its Execute stream closed');
      }
      await running.stopping;
      await ending;
      this.#running.delete(request.executionId);
    }
  }

  #openArtifacts(access: ArtifactAccess | undefined, logger: Logger, hooks: SessionHooks): ArtifactSession | undefined {
    if (access === undefined) return undefined;
    if (this.#artifacts === undefined) throw new KruntimesError('Unimplemented', 'this Runtime Server has no artifacts endpoint');
    return this.#artifacts.open(access, logger, hooks);
  }

  /** runtimed recorded the wait: the attempt is over, whatever stop had begun. */
  #waiting(running: Running, attempt: number): void {
    running.stopReason = 'waiting_input';
    running.stopMessage = `waiting for input: runtimed recorded the checkpoint of attempt ${String(attempt)}`;
  }

  /** User code has its answer: nothing of the attempt may keep running, no grace. */
  #endWaiting(running: Running): void {
    if (running.stopping === undefined) running.stopping = this.#terminate(running, 0);
    else signalGroup(running.child, 'SIGKILL');
  }

  /** The exit of a waiting execution is reported once no process of its group is left (bounded). */
  async #waitingGroupGone(running: Running, logger: Logger): Promise<void> {
    this.#endWaiting(running);
    await running.stopping;
    const pgid = running.child.pid;
    if (pgid === undefined || (await killGroupUntilGone(pgid, WAITING_GROUP_GONE_MS))) return;
    logger.warn({ pgid }, `processes of the waiting execution survived SIGKILL for ${String(WAITING_GROUP_GONE_MS / 1000)} s`);
  }

  /** Stops the execution at its timeout, or when the client goes away (maybe already). */
  #stopTriggers(running: Running, timeoutMs: number | undefined, signal: AbortSignal): StopTriggers {
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            this.#stop(running, 'timed_out', undefined);
          }, timeoutMs);
    const onAbort = (): void => {
      this.#stop(running, 'cancelled', undefined, 'stopped because its Execute stream closed');
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    return {
      clearTimer: () => {
        clearTimeout(timer);
      },
      release: () => {
        signal.removeEventListener('abort', onAbort);
        clearTimeout(timer);
      },
    };
  }

  /**
   * The leader's exit ends the task: whatever it left in its group is killed, so that
   * no process of a finished task lingers, then the pipes drain and close.
   */
  async #ended(
    child: TaskProcess,
    running: Running,
    pipesClosed: Promise<unknown>,
    queue: EventQueue<ExecutionEvent>,
    triggers: StopTriggers,
  ): Promise<void> {
    await exited(child);
    triggers.clearTimer();
    signalGroup(child, 'SIGKILL');
    await withTimeout(pipesClosed, PIPE_CLOSE_MS, () => {
      child.stdout.destroy();
      child.stderr.destroy();
    });
    await running.stopping;
    queue.close();
  }

  #stop(running: Running, reason: 'cancelled' | 'timed_out', graceMs: number | undefined, message = ''): void {
    if (running.stopping !== undefined) return;
    if (running.stopReason !== 'waiting_input') {
      running.stopReason = reason;
      running.stopMessage = message;
    }
    running.stopping = this.#terminate(running, graceMs ?? running.graceMs);
  }

  /** Ends the group; the end is reported only after this, once no member is left (bounded). */
  async #terminate(running: Running, graceMs: number): Promise<void> {
    if (await terminateGroup(running.child, graceMs)) return;
    this.#logger.warn(
      { pgid: running.child.pid },
      `processes of the stopped execution survived SIGKILL for ${String(GROUP_GONE_BOUND_MS / 1000)} s`,
    );
  }

  async #pipeLines(stream: NodeJS.ReadableStream | null, name: 'stdout' | 'stderr', queue: EventQueue<ExecutionEvent>): Promise<void> {
    if (stream === null) return;
    const splitter = new LineSplitter(LOG_LINE_BYTES);
    const emit = (lines: { text: string; truncated: boolean }[]): void => {
      const time = this.#clock();
      for (const line of lines) queue.push({ kind: 'log', stream: name, text: line.text, truncated: line.truncated, time });
    };
    try {
      for await (const chunk of stream) {
        emit(splitter.push(chunk as Buffer));
        await queue.ready();
      }
    } catch (error) {
      // Destroyed after the close timeout: keep what was read.
      this.#logger.debug({ err: error, stream: name }, 'task pipe closed with an error');
    }
    emit(splitter.end());
  }

  /** Records how the attempt's execution ended and returns that `exited` event. */
  #end(request: ExecuteRequest, event: Extract<ExecutionEvent, { kind: 'exited' }>): ExecutionEvent {
    this.#record.ended(request.runUid, request.attempt, request.executionId, event);
    return event;
  }

  #exited(
    reason: ExitReason,
    exitCode: number,
    signal: string,
    outputs: Readonly<Record<string, string>>,
    outputsError: string,
    message: string,
    manifest: readonly ArtifactClaim[],
  ): Extract<ExecutionEvent, { kind: 'exited' }> {
    return { kind: 'exited', reason, exitCode, signal, outputs, outputsError, message, manifest, time: this.#clock() };
  }
}

interface StopTriggers {
  /** The task has exited: its timeout no longer applies. */
  clearTimer(): void;
  /** The execution is over: neither the timeout nor the client's abort applies. */
  release(): void;
}
