/**
 * RecordOrigin, written by the controller-manager for a Run executed elsewhere
 * (`spec.origin.local`, by `krt run --local`): Pending straight to the recorded phase.
 */
import { LOCAL_RESULT_PHASES, RUN_REASONS, validateOutputs } from '@kruntimes/api';
import type { LocalResultPhase, LocalRunResult, RunReason, RunSpec, RunStatus } from '@kruntimes/api';
import { artifactRecordsProblem } from './bounds.ts';
import type { ReportProblem } from './bounds.ts';
import type { EventHandlers } from './handler.ts';
import type { TransitionResult } from './rules.ts';
import { accept, refuse, withReady } from './status.ts';
import type { TransitionContext } from './status.ts';

export const LOCAL_ORIGIN_HANDLERS: Pick<EventHandlers, 'RecordOrigin'> = {
  RecordOrigin: recordOrigin,
};

/** The status is the origin's record, checked like runtimed's own report (origin.ts). */
function recordOrigin(ctx: TransitionContext): TransitionResult {
  const origin = ctx.run.spec.origin?.local;
  if (origin === undefined) return refuse(ctx, 'precondition', 'spec.origin.local is not set');
  if (ctx.mode !== 'task') return refuse(ctx, 'precondition', 'only task Runs are executed locally');
  const checked = checkLocalResult(ctx.run.spec, origin.result);
  if (!checked.ok) return refuse(ctx, checked.kind, checked.detail);
  const status = localResultStatus(ctx.previous, origin.result);
  const { reason } = checked;
  const { message } = origin.result;
  if (ctx.cancelRequested) {
    const detail = `cancel requested before the outcome was recorded; the local run ended ${String(status.phase)} (${reason}): ${message}`;
    return accept(withReady(ctx, { ...status, phase: 'Cancelled' }, false, RUN_REASONS.cancelled, detail));
  }
  return accept(withReady(ctx, status, false, reason, message));
}

/** The reasons a recorded local result may carry, per phase: the ones runtimed writes for a task. */
const ORIGIN_REASONS: Readonly<Record<LocalResultPhase, readonly RunReason[]>> = {
  Succeeded: [RUN_REASONS.succeeded],
  Failed: [RUN_REASONS.failed, RUN_REASONS.nonZeroExit, RUN_REASONS.artifactMissing, RUN_REASONS.artifactInvalid],
  Timeout: [RUN_REASONS.timeout],
};

type CheckedResult = { ok: true; reason: RunReason } | ({ ok: false } & ReportProblem);

/**
 * The local result, checked like runtimed's own report of a task (a terminal phase and one
 * of its reasons, outputs within the bounds, artifacts against the declaration, a Succeeded
 * exit code 0, start before completion), so that a synced Run says nothing a cluster run
 * could not have said.
 */
function checkLocalResult(spec: RunSpec, result: LocalRunResult): CheckedResult {
  if (!(LOCAL_RESULT_PHASES as readonly string[]).includes(result.phase)) {
    return { ok: false, kind: 'precondition', detail: `recorded phase ${result.phase} is not one of ${LOCAL_RESULT_PHASES.join(', ')}` };
  }
  const reason = ORIGIN_REASONS[result.phase].find((allowed) => allowed === result.reason);
  if (reason === undefined)
    return { ok: false, kind: 'precondition', detail: `reason ${result.reason} is not one of a ${result.phase} task` };
  const problem = exitCodeProblem(result) ?? reportedValuesProblem(spec, result) ?? timesProblem(result);
  return problem === undefined ? { ok: true, reason } : { ok: false, ...problem };
}

function exitCodeProblem(result: LocalRunResult): ReportProblem | undefined {
  if (result.exitCode !== undefined && !Number.isInteger(result.exitCode))
    return { kind: 'precondition', detail: 'exitCode is not an integer' };
  if (result.phase === 'Succeeded' && result.exitCode !== 0) return { kind: 'precondition', detail: 'a Succeeded result has exit code 0' };
  return undefined;
}

/** Outputs within the bounds; artifacts only for a Succeeded result, against the declaration. */
function reportedValuesProblem(spec: RunSpec, result: LocalRunResult): ReportProblem | undefined {
  const violations = validateOutputs(result.outputs ?? {});
  if (violations.length > 0) return { kind: 'bounds', detail: violations.map((v) => `${v.field}: ${v.message}`).join('; ') };
  const artifacts = result.artifacts ?? [];
  if (result.phase !== 'Succeeded') {
    return artifacts.length > 0 ? { kind: 'precondition', detail: 'only a Succeeded result records artifacts' } : undefined;
  }
  return artifactRecordsProblem(spec.artifacts, artifacts);
}

function timesProblem(result: LocalRunResult): ReportProblem | undefined {
  const start = Date.parse(result.startTime);
  const completion = Date.parse(result.completionTime);
  if (Number.isNaN(start) || Number.isNaN(completion) || start > completion) {
    return { kind: 'precondition', detail: 'startTime and completionTime must be RFC 3339 times, the start not after the completion' };
  }
  return undefined;
}

/** The status the recorded result says: at least one attempt, the times, exit code, outputs and artifacts. */
function localResultStatus(previous: RunStatus, result: LocalRunResult): RunStatus {
  const outputs = result.outputs ?? {};
  const artifacts = result.artifacts ?? [];
  return {
    ...previous,
    phase: result.phase,
    attempt: Math.max(previous.attempt ?? 0, 1),
    startTime: result.startTime,
    completionTime: result.completionTime,
    ...(result.exitCode === undefined ? {} : { exitCode: result.exitCode }),
    ...(Object.keys(outputs).length > 0 ? { outputs: { ...outputs } } : {}),
    ...(artifacts.length > 0 ? { artifacts: structuredClone(artifacts) } : {}),
  };
}
