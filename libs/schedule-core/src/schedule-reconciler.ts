import { SCHEDULE_REASONS } from '@kruntimes/api';
import type { OwnerReference, Run, RunSchedule, ScheduleReason } from '@kruntimes/api';
import type {
  CacheReader,
  ControllerLogger,
  ObjectReconciler,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import { thaw, writeStatus } from '@kruntimes/run-client';
import type { ObjectApi } from '@kruntimes/run-client';
import { decideSchedule } from './decide-schedule.ts';
import type { ScheduleDecision, ScheduleRunView } from './decide-schedule.ts';
import { runsToPrune } from './history.ts';
import type { FinishedScheduleRun } from './history.ts';
import type { ScheduleMetrics } from './metrics.ts';
import { rfc3339, scheduledRun } from './run-naming.ts';
import { scheduleStatus } from './schedule-status.ts';
import { finishedScheduleRun, historyLimits, scheduleRunView, scheduleView } from './schedule-views.ts';

/** A schedule's work-queue key and the names it splits into. */
type ScheduleRef = ObjectRef;

interface CreatedRun {
  name: string;
  uid?: string;
}

/** What acting on a decision leaves the status to record. */
interface Acted {
  problem: { reason: ScheduleReason; message: string } | undefined;
  created: CreatedRun | undefined;
  /** The decision as the status records it (a Run name taken keeps the previous instants). */
  recorded: ScheduleDecision;
}

/** A wall clock that jumps (NTP, a resumed VM) is noticed within this, whatever the next instant. */
export const DEFAULT_REQUEUE_CAP_MS = 60_000;
/** How long a Run this controller created counts as active before the cache shows it. */
const EXPECTATION_TTL_MS = 30_000;

/** The writes of the schedule reconciler: Runs created and pruned, the schedules' status. */
export interface ScheduleClients {
  runs: Pick<ObjectApi<Run>, 'create' | 'get' | 'delete'>;
  runSchedules: Pick<ObjectApi<RunSchedule>, 'replaceStatus'>;
}

export interface ScheduleReconcilerOptions {
  /** Runs that name a schedule (label kruntimes.io/schedule). */
  runs: CacheReader<Run>;
  clients: ScheduleClients;
  logger: ControllerLogger;
  now: () => number;
  metrics?: ScheduleMetrics | undefined;
  /** Longest wait before a schedule is evaluated again. */
  requeueCapMs?: number | undefined;
}

/**
 * The reconciler of the `run-schedule` controller (key `namespace/schedule`): creates each
 * scheduled Run of a RunSchedule once, named from the schedule and the scheduled UTC
 * instant so that a create meeting AlreadyExists is the duplicate check (two replicas
 * racing create one Run); skips or queues behind an active Run; prunes finished Runs past
 * the history limits; keeps the status. The decisions are decideSchedule's and
 * runsToPrune's; this class reads the cache and writes.
 */
export class ScheduleReconciler implements ObjectReconciler<RunSchedule> {
  readonly #options: ScheduleReconcilerOptions;
  readonly #clients: ScheduleClients;
  readonly #runs: CacheReader<Run>;
  readonly #now: () => number;
  /** Runs created but not yet in the cache, per schedule key: they count as active meanwhile. */
  readonly #expected = new Map<string, { run: ScheduleRunView; until: number }>();

  constructor(options: ScheduleReconcilerOptions) {
    this.#options = options;
    this.#clients = options.clients;
    this.#runs = options.runs;
    this.#now = options.now;
  }

  /** Gone: its Runs go with it through their owner references. */
  gone({ key }: ObjectRef): void {
    this.#expected.delete(key);
  }

  async reconcile(cached: ReadonlyDeep<RunSchedule>, ref: ObjectRef): Promise<ReconcileResult | undefined> {
    const { key, namespace } = ref;
    const schedule = thaw<RunSchedule>(cached);
    const owned = this.#runs
      .list(namespace)
      .filter((run) => controlledBy(run.metadata.ownerReferences, schedule.metadata.uid))
      .map((run) => thaw<Run>(run));
    const now = this.#now();
    const runs = this.#withExpected(key, owned.map(scheduleRunView), now);
    const decision = decideSchedule(now, scheduleView(schedule), runs);
    const acted = await this.#act(ref, schedule, decision, now);
    await this.#prune(
      namespace,
      owned.map(finishedScheduleRun).filter((run) => run !== undefined),
      historyLimits(schedule),
    );
    await this.#record(ref, schedule, runs, acted, now);
    const cap = this.#options.requeueCapMs ?? DEFAULT_REQUEUE_CAP_MS;
    return { requeueAfterMs: Math.min(decision.requeueAfterMs ?? cap, cap) };
  }

  /** Creates the Run the decision asks for, if any; what the status is then to record. */
  async #act(ref: ScheduleRef, schedule: RunSchedule, decision: ScheduleDecision, now: number): Promise<Acted> {
    const acted: Acted = { problem: decision.problem, created: undefined, recorded: decision };
    if (decision.create === undefined) return acted;
    const outcome = await this.#createRun(schedule, decision.create.scheduledAt);
    if (outcome.taken !== undefined) {
      // Not acted on: the same instant is tried again until the name is free.
      const { lastScheduledAt, queuedAt } = scheduleView(schedule);
      return {
        problem: { reason: SCHEDULE_REASONS.runNameTaken, message: outcome.taken },
        created: undefined,
        recorded: { ...decision, lastScheduledAt, queuedAt, missed: 0 },
      };
    }
    if (outcome.created !== undefined) this.#noteCreated(ref, decision, decision.create, outcome.created, now);
    return { ...acted, created: outcome.created };
  }

  /** A Run just created: expected until the cache shows it, counted, logged. */
  #noteCreated(
    ref: ScheduleRef,
    decision: ScheduleDecision,
    create: NonNullable<ScheduleDecision['create']>,
    created: CreatedRun,
    now: number,
  ): void {
    this.#expected.set(ref.key, {
      run: { name: created.name, scheduledAt: create.scheduledAt, active: true },
      until: now + EXPECTATION_TTL_MS,
    });
    this.#options.metrics?.count(ref.namespace, ref.name, 'created');
    this.#options.metrics?.observeLateness((now - create.scheduledAt) / 1000);
    this.#options.logger.debug(
      {
        schedule: ref.key,
        run: created.name,
        scheduledAt: rfc3339(create.scheduledAt),
        fromQueue: create.fromQueue,
        missed: decision.missed,
      },
      'created scheduled Run',
    );
  }

  /** Writes the status when it changed; the skipped and missed counts only once it is written. */
  async #record(ref: ScheduleRef, schedule: RunSchedule, runs: ScheduleRunView[], acted: Acted, now: number): Promise<void> {
    const { problem, created, recorded } = acted;
    const active =
      runs.filter((run) => run.active).length + (created !== undefined && !runs.some((run) => run.name === created.name) ? 1 : 0);
    const status = scheduleStatus({
      previous: schedule.status,
      generation: schedule.metadata.generation,
      suspend: schedule.spec.suspend === true,
      decision: recorded,
      problem,
      active,
      created,
      now,
    });
    const written = await writeStatus(this.#clients.runSchedules, schedule, status, this.#options.logger);
    if (written.written) {
      if (recorded.skip !== undefined) this.#options.metrics?.count(ref.namespace, ref.name, 'skipped');
      this.#options.metrics?.count(ref.namespace, ref.name, 'missed', recorded.missed);
    }
  }

  /** The cached Runs, plus the one this controller created last if the cache has not shown it yet. */
  #withExpected(key: string, cached: ScheduleRunView[], now: number): ScheduleRunView[] {
    const expected = this.#expected.get(key);
    if (expected === undefined) return cached;
    if (cached.some((run) => run.name === expected.run.name) || expected.until <= now) {
      this.#expected.delete(key);
      return cached;
    }
    return [...cached, expected.run];
  }

  /**
   * Creates the Run of one scheduled instant. AlreadyExists is the duplicate check: the Run
   * is this schedule's (another replica, or an earlier attempt whose status write was lost),
   * unless an object of another owner holds the name, which is reported, never adopted.
   */
  async #createRun(schedule: RunSchedule, scheduledAt: number): Promise<{ created?: CreatedRun; taken?: string }> {
    const body = scheduledRun(schedule, { scheduledAt });
    const namespace = schedule.metadata.namespace ?? '';
    const name = body.metadata.name ?? '';
    const created = await this.#clients.runs.create(namespace, body);
    if (created.ok)
      return { created: { name, ...(created.object.metadata.uid === undefined ? {} : { uid: created.object.metadata.uid }) } };
    const existing = await this.#clients.runs.get(namespace, name);
    // Deleted since the create was refused: an error, so the schedule is reconciled again.
    if (existing === undefined) throw new Error(`Run ${namespace}/${name} existed on create and is gone`, { cause: created.error });
    if (controlledBy(existing.metadata.ownerReferences, schedule.metadata.uid)) return {};
    return { taken: `Run ${namespace}/${name} exists and is not controlled by this RunSchedule; delete or rename it` };
  }

  /** Deletes finished Runs past the history limits, each preconditioned on the version pruning decided from. */
  async #prune(namespace: string, finished: FinishedScheduleRun[], limits: ReturnType<typeof historyLimits>): Promise<void> {
    for (const run of runsToPrune(finished, limits)) {
      // Gone or changed since the cache read (NotFound, Conflict): its watch event brings a fresh decision.
      await this.#clients.runs.delete(namespace, run.name, {
        preconditions: { uid: run.uid, resourceVersion: run.resourceVersion },
        propagationPolicy: 'Background',
      });
    }
  }
}

function controlledBy(owners: readonly ReadonlyDeep<OwnerReference>[] | undefined, uid: string | undefined): boolean {
  return uid !== undefined && owners?.some((ref) => ref.controller === true && ref.uid === uid) === true;
}
