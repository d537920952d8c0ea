import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP_VERSION, DEFAULTS, RUN_KIND, parseDurationSeconds } from '@kruntimes/api';
import type { Run, RuntimeLanguage } from '@kruntimes/api';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { decideLostExecutionReason, entrypointFile, runEnv } from '@kruntimes/run-state';
import type { Logger } from 'pino';
import { LocalArtifacts } from './local-artifacts.ts';
import { localStatus, outcomeEvent } from './local-outcome.ts';
import type { ArtifactCheck, LocalExit, LocalStatus } from './local-outcome.ts';
import { RUN_FILES } from './run-dir.ts';
import type { LocalRunFile } from './run-file.ts';
import { RuntimeServerProcess } from './runtime-server-process.ts';
import type { RuntimeServerCommand } from './runtime-server-process.ts';

const { ExitReason, LogStream } = runtimeServerV1;

export interface LocalExecution {
  runFile: LocalRunFile;
  language: RuntimeLanguage;
  /** The source text, already checked against the lock. */
  source: string;
  runId: string;
  /** `.krt/runs/<id>`: created by the caller, with run.json and lock.json in it. */
  runDir: string;
  runtimeServer: RuntimeServerCommand;
  logger: Logger;
  /** Aborted when the user stops krt (Ctrl-C): the execution is cancelled, the run ends Cancelled. */
  signal?: AbortSignal;
  /** Each line the task prints, as it prints it. */
  onLine?: (stream: 'stdout' | 'stderr', text: string) => void;
}

/** The Run object of a local run, as run.json records it and the task's KRT_* variables name it. */
export function localRun(runFile: LocalRunFile, uid: string): Run {
  return {
    apiVersion: API_GROUP_VERSION,
    kind: RUN_KIND,
    metadata: { name: runFile.name, ...(runFile.namespace === undefined ? {} : { namespace: runFile.namespace }), uid },
    spec: runFile.spec,
  };
}

/**
 * Runs one task attempt on this machine the way runtimed runs it in a Runtime Pod: the
 * source written as the entrypoint of a fresh workspace, a real Runtime Server process
 * of the language, one Execute with the same request (args, env with the KRT_*
 * variables, spec.timeout, the cancel grace period, artifact access when declared), the
 * exit read as runtimed reads it, declared artifacts checked, and the status computed
 * by the Run state machine. Writes status.json, stdout.log and stderr.log into the run
 * directory and returns the status.
 */
export async function executeLocally(execution: LocalExecution): Promise<LocalStatus> {
  const { spec } = execution.runFile;
  const uid = randomUUID();
  const run = localRun(execution.runFile, uid);
  const workspace = join(execution.runDir, RUN_FILES.workspace);
  await mkdir(workspace, { recursive: true });
  await writeFile(join(workspace, entrypointFile(execution.language)), execution.source, { mode: 0o644 });
  await writeFile(join(execution.runDir, RUN_FILES.stdout), '');
  await writeFile(join(execution.runDir, RUN_FILES.stderr), '');
  const artifacts =
    spec.artifacts === undefined
      ? undefined
      : await LocalArtifacts.start(join(execution.runDir, RUN_FILES.artifacts), spec.artifacts, execution.logger);
  let server: RuntimeServerProcess | undefined;
  try {
    server = await RuntimeServerProcess.start(execution.runtimeServer);
    const startTime = rfc3339(Date.now());
    const timeoutSeconds = spec.timeout === undefined ? undefined : parseDurationSeconds(spec.timeout);
    const request: runtimeServerV1.ExecuteRequest = {
      executionId: `local-${execution.runId}`,
      runUid: uid,
      attempt: 1,
      workdir: await realpath(workspace),
      entrypoint: entrypointFile(execution.language),
      args: [...(spec.mode.task?.args ?? [])],
      env: runEnv(run, spec.runtime, 1),
      gracePeriod: durationFromMillis(DEFAULTS.cancelGracePeriodSeconds * 1000),
      ...(timeoutSeconds === undefined ? {} : { timeout: durationFromMillis(timeoutSeconds * 1000) }),
      ...(artifacts === undefined ? {} : { artifacts: artifacts.access() }),
    };
    const exited = await follow(server, request, execution);
    artifacts?.withdraw();
    const cancelled = execution.signal?.aborted === true;
    // A stream that broke without the end: the Runtime Server's death took the task with it (its guard).
    const died = exited.exited === undefined && !cancelled && (await server.died(request));
    const exit = localExit(exited.exited, exited.failure, cancelled, died);
    let check: ArtifactCheck = { type: 'none' };
    if (artifacts !== undefined && exit.type === 'completed' && exit.exitCode === 0)
      check = await artifacts.verify(exited.exited?.manifest ?? []);
    const status = localStatus(run, outcomeEvent(spec, exit, check), startTime, rfc3339(Date.now()));
    if (exit.type === 'lost' || exit.type === 'startFailed')
      execution.logger.warn({ runtimeServerLog: server.logTail }, 'the execution did not end normally');
    await writeFile(join(execution.runDir, RUN_FILES.status), `${JSON.stringify(status, null, 2)}\n`);
    return status;
  } finally {
    await server?.stop();
    await artifacts?.close();
    await rm(workspace, { recursive: true, force: true });
  }
}

interface Followed {
  exited: runtimeServerV1.ExecutionExited | undefined;
  failure: unknown;
}

/** The Execute stream to its end: log lines into the run directory (and to the caller), the exit event. */
async function follow(server: RuntimeServerProcess, request: runtimeServerV1.ExecuteRequest, execution: LocalExecution): Promise<Followed> {
  let exited: runtimeServerV1.ExecutionExited | undefined;
  const onAbort = (): void => {
    // As runtimed cancels: SIGTERM to the task's process group, the grace period, SIGKILL.
    void server.client.cancelExecution({ executionId: request.executionId, gracePeriod: request.gracePeriod }).catch(() => undefined);
  };
  execution.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const { event } of server.client.execute(request)) {
      if (event?.$case === 'exited') exited = event.exited;
      if (event?.$case !== 'log') continue;
      const stream = event.log.stream === LogStream.LOG_STREAM_STDERR ? 'stderr' : 'stdout';
      await appendFile(join(execution.runDir, stream === 'stderr' ? RUN_FILES.stderr : RUN_FILES.stdout), `${event.log.text}\n`);
      execution.onLine?.(stream, event.log.text);
    }
    return { exited, failure: undefined };
  } catch (error) {
    return { exited, failure: error };
  } finally {
    execution.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The Runtime Server's exit as task-execution.ts reads it. `runtimeServerDied`: the stream
 * broke without the end and the Runtime Server process died (killed or crashed).
 */
export function localExit(
  exited: runtimeServerV1.ExecutionExited | undefined,
  failure: unknown,
  cancelled: boolean,
  runtimeServerDied = false,
): LocalExit {
  if (exited === undefined) {
    if (cancelled) return { type: 'cancelled' };
    const reason = decideLostExecutionReason(runtimeServerDied);
    if (reason !== undefined)
      return {
        type: 'lost',
        message: 'lost the execution: the Runtime Server died during the execution (killed or crashed); the task was ended with it',
        reason,
      };
    return { type: 'lost', message: `lost the execution: ${failure instanceof Error ? failure.message : 'no exit event'}` };
  }
  switch (exited.reason) {
    case ExitReason.EXIT_REASON_COMPLETED:
      if (cancelled) return { type: 'cancelled', exitCode: exited.exitCode };
      return { type: 'completed', exitCode: exited.exitCode, outputs: { ...exited.outputs } };
    case ExitReason.EXIT_REASON_TIMED_OUT:
      return { type: 'timedOut' };
    case ExitReason.EXIT_REASON_START_FAILED:
      return { type: 'startFailed', message: exited.message };
    case ExitReason.EXIT_REASON_CANCELLED:
      if (cancelled) return { type: 'cancelled', ...(exited.exitCode >= 0 ? { exitCode: exited.exitCode } : {}) };
      return { type: 'lost', message: `the execution ended unexpectedly (${exited.message || String(exited.reason)})` };
    case ExitReason.EXIT_REASON_WAITING_INPUT:
      return { type: 'lost', message: 'the execution asked for input, which krt run --local does not support' };
    case ExitReason.EXIT_REASON_UNSPECIFIED:
    case ExitReason.UNRECOGNIZED:
      return { type: 'lost', message: `the execution ended unexpectedly (${exited.message || String(exited.reason)})` };
  }
}

/** RFC 3339 in whole seconds, as metav1.Time serialises. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
