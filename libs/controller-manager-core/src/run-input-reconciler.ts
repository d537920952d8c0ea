import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, RUN_INPUT_PLURAL, RUN_KIND, RUN_PLURAL, boundedMessage } from '@kruntimes/api';
import type { Run, RunInput, RunStatus } from '@kruntimes/api';
import { decideWaitingRun, isDecided } from '@kruntimes/input-core';
import { splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReadonlyDeep, ReconcileResult, SharedInformer } from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { isWaitingForInput, transition } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';
import { phaseOf } from './caches.ts';
import type { RunObject } from './caches.ts';
import type { RunInputObject } from './objects.ts';
import type { InputMetrics } from './input-metrics.ts';
import { acceptedMessage, decideResponse, runInputStatus } from './run-input-status.ts';
import type { RunInputOutcome } from './run-input-status.ts';
import { rfc3339 } from './runtime-status-writer.ts';

export type { RunInputObject } from './objects.ts';

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

/** A status replacement: the resourceVersion in metadata fences it. */
interface StatusBody {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string | undefined; resourceVersion: string | undefined };
  spec: unknown;
  status: unknown;
}

export interface RunInputReconcilerOptions {
  caches: { runInputs: SharedInformer<RunInputObject>; runs: SharedInformer<RunObject> };
  custom: CustomObjectsApi;
  /** Records an Event on the Run for each decided response (best effort); none when undefined. */
  core?: CoreV1Api;
  logger: ControllerLogger;
  now: () => number;
  metrics?: InputMetrics;
}

/**
 * Waiting for input (docs/waiting-input.md), two reconcilers:
 * - `reconcileInput` (key `namespace/runinput`): decides a RunInput once, against the Run
 *   as the API server has it (decideRunInput). Accepting sends InputReceived through the
 *   state machine as a status write fenced on the Run's resourceVersion: of two responses
 *   racing for one wait only one write lands; the other re-reads and is decided again
 *   (DuplicateResponse or RunNotWaiting). Then the RunInput's Accepted condition is written.
 * - `reconcileWaitingRun` (key `namespace/run`): a WaitingInput Run has no owner, so this
 *   ends it at once when its cancel is requested (WaitCancelled) and when spec.timeout,
 *   counted from status.startTime, passes (WaitTimedOut); until then it is requeued for its deadline.
 */
export class RunInputReconciler {
  readonly #options: RunInputReconcilerOptions;

  constructor(options: RunInputReconcilerOptions) {
    this.#options = options;
  }

  async reconcileInput(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    // Decided is final (the spec is immutable, so the generation never moves): the cache is enough to skip it.
    const cached = this.#options.caches.runInputs.get(name, namespace);
    if (cached === undefined || isDecided(cached as unknown as RunInput)) return undefined;
    for (let round = 0; round < MAX_CONFLICTS; round += 1) {
      // Live, not the cache: a RunInput this controller decided a moment ago may still look undecided there.
      const input = await this.#get<RunInput>(RUN_INPUT_PLURAL, namespace, name);
      if (input === undefined || input.metadata.deletionTimestamp !== undefined || isDecided(input)) return undefined;
      const run = await this.#get<Run>(RUN_PLURAL, namespace, input.spec.runName);
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

  async reconcileWaitingRun(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const cached = this.#options.caches.runs.get(name, namespace);
    if (cached === undefined || !isWaitingForInput(phaseOf(cached))) return undefined;
    // The cache says whether anything is due; what is written is decided again from the live Run.
    const due = decideWaitingRun(structuredClone(cached) as unknown as Run, this.#options.now());
    if (due.type === 'none') return undefined;
    if (due.type === 'requeue') return { requeueAfterMs: Math.min(due.afterMs, WAIT_RECHECK_CAP_MS) };
    for (let round = 0; round < MAX_CONFLICTS; round += 1) {
      const run = await this.#get<Run>(RUN_PLURAL, namespace, name);
      if (run === undefined) return undefined;
      const decision = decideWaitingRun(run, this.#options.now());
      let event: RunEvent;
      switch (decision.type) {
        case 'none':
          return undefined;
        case 'requeue':
          return { requeueAfterMs: Math.min(decision.afterMs, WAIT_RECHECK_CAP_MS) };
        case 'cancel':
          event = { type: 'WaitCancelled', message: decision.message };
          break;
        case 'timeout':
          event = { type: 'WaitTimedOut', message: decision.message };
          break;
      }
      const result = transition({ run, event, writer: 'controller-manager', now: rfc3339(this.#options.now()) });
      // decideWaitingRun chose the event from this very object: a refusal is a bug, not a race (terminal).
      if (!result.ok) throw result.error;
      if (!(await this.#writeRunStatus(run, result.status))) continue;
      const phase = result.status.phase ?? 'Pending';
      this.#options.metrics?.waitEnded(namespace, phase);
      this.#options.logger.debug({ run: key, phase, event: event.type }, 'ended a Run waiting for input');
      return undefined;
    }
    throw new KruntimesError('Conflict', `Run ${key} changed ${String(MAX_CONFLICTS)} times while its wait was ended`);
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
        const result = transition({ run, event, writer: 'controller-manager', now: rfc3339(this.#options.now()) });
        // decideRunInput checks what the state machine checks: a refusal is a bug, not a race (terminal).
        if (!result.ok) throw result.error;
        if (!(await this.#writeRunStatus(run, result.status))) return 'conflict';
        const attempt = result.status.attempt ?? 0;
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
    const core = this.#options.core;
    if (core === undefined || outcome.runUID === undefined || outcome.runUID === '') return;
    const namespace = input.metadata.namespace ?? '';
    const runName = input.spec.runName;
    const at = new Date(this.#options.now());
    const refused = outcome.kind === 'refused';
    try {
      await core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${runName}.`, namespace },
          involvedObject: { apiVersion: API_GROUP_VERSION, kind: RUN_KIND, name: runName, namespace, uid: outcome.runUID },
          reason: refused
            ? `${RESPONSE_EVENT_REASONS.refusedPrefix}${outcome.reason}`
            : outcome.kind === 'accepted'
              ? RESPONSE_EVENT_REASONS.accepted
              : RESPONSE_EVENT_REASONS.duplicate,
          message: boundedMessage(`RunInput ${input.metadata.name ?? ''} (response ${input.spec.responseId}): ${outcome.message}`),
          type: refused ? 'Warning' : 'Normal',
          source: { component: 'kruntimes-controller-manager' },
          reportingComponent: 'kruntimes-controller-manager',
          reportingInstance: 'kruntimes-controller-manager',
          firstTimestamp: at,
          lastTimestamp: at,
          count: 1,
        },
      });
    } catch (error) {
      this.#options.logger.debug({ run: `${namespace}/${runName}`, err: error }, 'could not record the response Event');
    }
  }

  /** The live object, or undefined when it is gone. */
  async #get<T>(plural: string, namespace: string, name: string): Promise<T | undefined> {
    try {
      return (await this.#options.custom.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural,
        name,
      })) as T;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  /** The Run's status, fenced on the resourceVersion it was decided from. False: it changed or is gone since (read again). */
  async #writeRunStatus(run: ReadonlyDeep<Run> | Run, status: RunStatus): Promise<boolean> {
    const { name = '', namespace = '', uid, resourceVersion } = run.metadata;
    return this.#replaceStatus(RUN_PLURAL, {
      apiVersion: run.apiVersion,
      kind: run.kind,
      metadata: { name, namespace, uid, resourceVersion },
      spec: run.spec,
      status,
    });
  }

  /** The RunInput's status, fenced on the resourceVersion of the live read. False: it changed since (read again). */
  async #writeInputStatus(input: RunInput, outcome: RunInputOutcome): Promise<boolean> {
    const { name = '', namespace = '', uid, resourceVersion, generation } = input.metadata;
    const status = runInputStatus(input.status, outcome, generation, rfc3339(this.#options.now()));
    return this.#replaceStatus(RUN_INPUT_PLURAL, {
      apiVersion: input.apiVersion,
      kind: input.kind,
      metadata: { name, namespace, uid, resourceVersion },
      spec: input.spec,
      status,
    });
  }

  async #replaceStatus(plural: string, body: StatusBody): Promise<boolean> {
    const { name, namespace } = body.metadata;
    try {
      await this.#options.custom.replaceNamespacedCustomObjectStatus({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural,
        name,
        body,
      });
      return true;
    } catch (error) {
      if (error instanceof ApiException && (error.code === 409 || error.code === 404)) {
        this.#options.logger.debug({ object: `${plural}/${namespace}/${name}`, code: error.code }, 'status write refused; reading again');
        return false;
      }
      throw error;
    }
  }
}
