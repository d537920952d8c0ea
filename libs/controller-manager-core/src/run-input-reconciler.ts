import { API_GROUP_VERSION, RUN_KIND, boundedMessage } from '@kruntimes/api';
import type { Run, RunInput } from '@kruntimes/api';
import { decideWaitingRun, isDecided } from '@kruntimes/input-core';
import type {
  ControllerLogger,
  EventRecorder,
  ObjectReconciler,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { fencedWrite, thaw, writeStatus, writeTransition } from '@kruntimes/run-client';
import type { ObjectApi } from '@kruntimes/run-client';
import { isWaitingForInput, transition } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';
import { phaseOf } from './caches.ts';
import type { InputMetrics } from './input-metrics.ts';
import { acceptedMessage, decideResponse, runInputStatus } from './run-input-status.ts';
import type { RunInputOutcome } from './run-input-status.ts';
import { rfc3339 } from './rfc3339.ts';

/** Fenced writes refused in a row before the reconcile gives up and is requeued with backoff. */
const MAX_CONFLICTS = 5;
/** A waiting Run is looked at again within this even when its deadline is later, so that a wall clock that jumps is noticed. */
const WAIT_RECHECK_CAP_MS = 10 * 60_000;

/** Reasons of the Events on a Run about its responses: `Response` and the RunInput's reason for a refusal. */
export const RESPONSE_EVENT_REASONS = {
  accepted: 'ResponseAccepted',
  duplicate: 'ResponseDuplicate',
  refusedPrefix: 'Response',
} as const;

export interface RunInputReconcilerOptions {
  /** The calls made of the typed clients (KruntimesClients' `runs` and `runInputs` are ObjectClients). */
  clients: { runs: ObjectApi<Run>; runInputs: ObjectApi<RunInput> };
  /** Records an Event on the Run for each decided response (best effort); none when undefined. */
  events?: Pick<EventRecorder, 'event'>;
  logger: ControllerLogger;
  now: () => number;
  metrics?: InputMetrics;
}

/**
 * Waiting for input (docs/waiting-input.md), two reconcilers:
 * - `input` (key `namespace/runinput`): decides a RunInput once, against the Run
 *   as the API server has it (decideRunInput). Accepting sends InputReceived through the
 *   state machine as a status write fenced on the Run's resourceVersion: of two responses
 *   racing for one wait only one write lands; the other re-reads and is decided again
 *   (DuplicateResponse or RunNotWaiting). Then the RunInput's Accepted condition is written.
 * - `waitingRun` (key `namespace/run`, a Run being deleted too): a WaitingInput Run has no owner, so this
 *   ends it at once when its cancel is requested (WaitCancelled) and when spec.timeout,
 *   counted from status.startTime, passes (WaitTimedOut); until then it is requeued for its deadline.
 */
export class RunInputReconciler {
  readonly #options: RunInputReconcilerOptions;

  constructor(options: RunInputReconcilerOptions) {
    this.#options = options;
  }

  /** `run-input`, handed RunInputs being deleted too (deleting: 'reconcile'): the live read decides on them. */
  readonly input: ObjectReconciler<RunInput> = { reconcile: (input, ref) => this.#reconcileInput(input, ref) };
  /** `waiting-input`, handed Runs being deleted too (deleting: 'reconcile'): decided like any waiting Run. */
  readonly waitingRun: ObjectReconciler<Run> = { reconcile: (run, ref) => this.#reconcileWaitingRun(run, ref) };

  async #reconcileInput(cached: ReadonlyDeep<RunInput>, { key, namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    // Decided is final (the spec is immutable, so the generation never moves): the cache is enough to skip it.
    if (isDecided(cached)) return undefined;
    for (let round = 0; round < MAX_CONFLICTS; round += 1) {
      // Live, not the cache: a RunInput this controller decided a moment ago may still look undecided there.
      const input = await this.#options.clients.runInputs.get(namespace, name);
      if (input === undefined || input.metadata.deletionTimestamp !== undefined || isDecided(input)) return undefined;
      const run = await this.#options.clients.runs.get(namespace, input.spec.runName);
      const outcome = await this.#decide(input, run);
      if (outcome === 'none') return undefined;
      if (outcome === 'conflict') continue;
      if (!(await this.#writeInputStatus(input, outcome))) continue;
      this.#recorded(input, outcome);
      await this.#recordEvent(input, outcome);
      return undefined;
    }
    throw new KruntimesError('Conflict', `RunInput ${key} or its Run changed ${String(MAX_CONFLICTS)} times while it was decided`);
  }

  async #reconcileWaitingRun(cached: ReadonlyDeep<Run>, { key, namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    if (!isWaitingForInput(phaseOf(cached))) return undefined;
    // The cache says whether anything is due; what is written is decided again from the live Run.
    const due = decideWaitingRun(thaw<Run>(cached), this.#options.now());
    if (due.type === 'none') return undefined;
    if (due.type === 'requeue') return { requeueAfterMs: Math.min(due.afterMs, WAIT_RECHECK_CAP_MS) };
    // Each version read live: decided on (the wait may have ended meanwhile), then written fenced on it.
    let event: RunEvent | undefined;
    const written = await fencedWrite<Run, ReconcileResult | undefined>({
      read: () => this.#options.clients.runs.get(namespace, name),
      retries: MAX_CONFLICTS - 1,
      onConflict: () => {
        this.#refused(`runs/${namespace}/${name}`, 'Conflict');
      },
      decide: (run) => {
        const decision = decideWaitingRun(run, this.#options.now());
        let next: RunEvent;
        switch (decision.type) {
          case 'none':
            return { refuse: undefined };
          case 'requeue':
            return { refuse: { requeueAfterMs: Math.min(decision.afterMs, WAIT_RECHECK_CAP_MS) } };
          case 'cancel':
            next = { type: 'WaitCancelled', message: decision.message };
            break;
          case 'timeout':
            next = { type: 'WaitTimedOut', message: decision.message };
            break;
        }
        event = next;
        const result = transition({ run, event: next, writer: 'controller-manager', now: rfc3339(this.#options.now()) });
        // decideWaitingRun chose the event from this very object: a refusal is a bug, not a race (terminal).
        if (!result.ok) throw result.error;
        return { write: () => this.#options.clients.runs.replaceStatus(run, result.status) };
      },
    });
    if (written.ok) {
      const phase = written.object.status?.phase ?? 'Pending';
      this.#options.metrics?.waitEnded(namespace, phase);
      this.#options.logger.debug({ run: key, phase, event: event?.type }, 'ended a Run waiting for input');
      return undefined;
    }
    switch (written.reason) {
      case 'Refused':
        return written.error;
      case 'NotFound':
        return undefined;
      case 'Conflict':
        throw new KruntimesError('Conflict', `Run ${key} changed ${String(MAX_CONFLICTS)} times while its wait was ended`);
    }
  }

  /** What to record on the RunInput; on accept, the Run was continued first. 'conflict': read both again. */
  async #decide(input: RunInput, run: Run | undefined): Promise<RunInputOutcome | 'none' | 'conflict'> {
    const decision = decideResponse(input, run);
    const runUID = run?.metadata.uid ?? '';
    switch (decision.type) {
      case 'none':
        return 'none';
      case 'recorded':
        return { kind: 'accepted', attempt: decision.attempt, runUID, message: acceptedMessage(input, decision.attempt) };
      case 'duplicate':
        return { kind: 'duplicate', attempt: decision.attempt, runUID, message: decision.message };
      case 'refuse':
        return { kind: 'refused', reason: decision.reason, message: decision.message, ...(run === undefined ? {} : { runUID }) };
      case 'accept': {
        if (run === undefined) return 'conflict';
        const event: RunEvent = {
          type: 'InputReceived',
          responseId: decision.responseId,
          runInput: decision.runInput,
          input: decision.input,
        };
        // Fenced on the version decided from, no retry: changed or gone since, both are read again.
        const written = await writeTransition(this.#options.clients.runs, run, event, {
          writer: 'controller-manager',
          now: () => rfc3339(this.#options.now()),
        });
        // decideRunInput checks what the state machine checks: a refusal is a bug, not a race (terminal).
        if (!written.ok && written.reason === 'Refused') throw written.error;
        if (!written.ok) {
          this.#refused(`runs/${run.metadata.namespace ?? ''}/${run.metadata.name ?? ''}`, written.reason);
          return 'conflict';
        }
        const attempt = written.object.status?.attempt ?? 0;
        return { kind: 'accepted', attempt, runUID, message: acceptedMessage(input, attempt) };
      }
    }
  }

  #recorded(input: RunInput, outcome: RunInputOutcome): void {
    const namespace = input.metadata.namespace ?? '';
    const reason = outcome.kind === 'refused' ? outcome.reason : outcome.kind === 'accepted' ? 'Accepted' : 'DuplicateResponse';
    this.#options.metrics?.decided(namespace, reason);
    this.#options.logger.debug(
      {
        runInput: `${namespace}/${input.metadata.name ?? ''}`,
        run: input.spec.runName,
        responseId: input.spec.responseId,
        reason,
        ...(outcome.kind === 'refused' ? {} : { attempt: outcome.attempt }),
      },
      'decided a RunInput',
    );
  }

  /**
   * An Event on the Run (`kubectl describe run`): who answered is in the audit log, what
   * became of each answer is here next to the Run's other Events. Best effort: a failure
   * is logged and changes nothing, the RunInput's status is the record.
   */
  async #recordEvent(input: RunInput, outcome: RunInputOutcome): Promise<void> {
    const events = this.#options.events;
    if (events === undefined || outcome.runUID === undefined || outcome.runUID === '') return;
    const namespace = input.metadata.namespace ?? '';
    const refused = outcome.kind === 'refused';
    await events.event({
      regarding: { apiVersion: API_GROUP_VERSION, kind: RUN_KIND, name: input.spec.runName, namespace, uid: outcome.runUID },
      type: refused ? 'Warning' : 'Normal',
      reason: refused
        ? `${RESPONSE_EVENT_REASONS.refusedPrefix}${outcome.reason}`
        : outcome.kind === 'accepted'
          ? RESPONSE_EVENT_REASONS.accepted
          : RESPONSE_EVENT_REASONS.duplicate,
      message: boundedMessage(`RunInput ${input.metadata.name ?? ''} (response ${input.spec.responseId}): ${outcome.message}`),
    });
  }

  /** The RunInput's status, fenced on the resourceVersion of the live read. False: it changed since (read again). */
  async #writeInputStatus(input: RunInput, outcome: RunInputOutcome): Promise<boolean> {
    const status = runInputStatus(input.status, outcome, input.metadata.generation, rfc3339(this.#options.now()));
    const written = await writeStatus(this.#options.clients.runInputs, input, status, this.#options.logger);
    return written.written || written.reason === 'Unchanged';
  }

  #refused(object: string, reason: 'NotFound' | 'Conflict'): void {
    this.#options.logger.debug({ object, reason }, 'status write refused; reading again');
  }
}
