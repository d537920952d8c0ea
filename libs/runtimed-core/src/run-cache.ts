import { CONDITION_TYPES } from '@kruntimes/api';
import type { Run, RunSpec, RunStatus } from '@kruntimes/api';
import type { Projection } from '@kruntimes/controller-runtime';
import { kept, projectedRun } from '@kruntimes/run-client';
import { findCondition } from '@kruntimes/run-state';

/**
 * What runtimed keeps of a Run of its Runtime, decided per watch event (a Run bound to this
 * Pod arrives as a new event, with the whole object).
 *
 * A Run assigned to this Pod (status.assignedPodUID is the Pod's UID) is kept whole: its
 * reconcile executes and registers from the cached object (source, env, args, timeout,
 * artifacts, status.source and status.resume) and hands it to the fenced writer (Claim,
 * RefuseClaim, a task's outcome), and the function metrics read its Ready condition's time.
 *
 * Every other Run keeps only what its readers read:
 * - planRun (every event of the Runtime's Runs): spec.runtime, uid, status.assignedPodUID
 *   and status.attempt, which are enough to ignore it or release local state of it;
 * - the claim check (podHolders, run-state's capacityHold): uid, name, finalizers,
 *   phase, assignedPodUID, attempt;
 * - the outcome records (decideOutcomeRecord): uid, deletionTimestamp, phase, attempt;
 * - the drain and the event routing: name, namespace, assignedPodUID, spec.runtime;
 * - the dataplane's routing to the owner (routeInvocation): uid, name, deletionTimestamp,
 *   spec.runtime, the function mode (its invocationTimeoutSeconds), phase, the Ready
 *   condition, attempt, assignedPodUID and assignedPod.
 * So: runIdentity's metadata, spec.runtime and the mode (a task's args dropped), status
 * phase, attempt, assignedPod, assignedPodUID and the Ready condition. Dropped: the source,
 * env and the rest of the spec, labels and annotations, the other conditions, reason,
 * message, outputs, the source snapshot, resume, endpoint and artifacts.
 *
 * No write starts from a slim version: runtimed writes only the Runs of its own epochs,
 * and a slim version is never assigned to this Pod, so the fenced writer's epoch check
 * refuses it and reads the live Run (RunClient.transition's `from`).
 */
export function runtimedRunView(run: Run, podUID: string): Run {
  if (run.status?.assignedPodUID === podUID) return run;
  const status = run.status;
  const ready = findCondition(status?.conditions, CONDITION_TYPES.ready);
  const keptStatus: RunStatus | undefined =
    status === undefined
      ? undefined
      : { ...kept(status, ['phase', 'attempt', 'assignedPod', 'assignedPodUID']), ...(ready === undefined ? {} : { conditions: [ready] }) };
  const spec: RunSpec = {
    runtime: run.spec.runtime,
    source: {},
    mode: run.spec.mode.function === undefined ? { task: {} } : { function: run.spec.mode.function },
  };
  return projectedRun(run, spec, keptStatus);
}

/** The projection of runtimed's Run watch, for the Pod `podUID` (see runtimedRunView). */
export function runtimedRunProjection(podUID: string): Projection<Run> {
  return { name: 'runtimed', keep: (run: Run) => runtimedRunView(run, podUID) };
}
