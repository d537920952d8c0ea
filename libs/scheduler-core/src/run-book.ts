import type { Run, RunSpec } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { ROOM_REASONS, oldestFirst } from './placement.ts';
import type { RunOrder } from './placement.ts';

/** A Run's recorded creator. */
export type RunCreator = NonNullable<RunSpec['creator']>;

/** A Run that waits alike at every pass until it changes or its Runtime's facts do. */
interface SettledRun extends RunOrder {
  run: ReadonlyDeep<Run>;
  /** Its stored reason, or SETTLED_SILENT. */
  reason: string;
  /** creatorKey of its recorded creator. */
  creator: string | undefined;
}

/** One Runtime's Pending Runs as its passes left them. */
class RuntimeRuns {
  /** The facts (passSignature) under which the settled Runs were settled; undefined: none yet, plan them all. */
  signature: string | undefined;
  /** Runs changed since the pass that last planned them (latest version), or not settled by it. */
  readonly open = new Map<string, ReadonlyDeep<Run>>();
  readonly settled = new Map<string, SettledRun>();
  /** Settled Runs per reason: the pass's gauges count them without looking at them. */
  readonly reasons = new Map<string, number>();
  /** The recorded creators of settled Runs (creatorKey -> creator, Runs): reviewed at every pass, as theirs may change. */
  readonly creators = new Map<string, { creator: ReadonlyDeep<RunCreator>; runs: number }>();

  unsettle(uid: string): void {
    const settled = this.settled.get(uid);
    if (settled === undefined) return;
    this.settled.delete(uid);
    addCount(this.reasons, settled.reason, -1);
    if (settled.creator !== undefined) {
      const creator = this.creators.get(settled.creator);
      if (creator !== undefined && --creator.runs === 0) this.creators.delete(settled.creator);
    }
  }

  settle(uid: string, run: ReadonlyDeep<Run>, reason: string): void {
    this.unsettle(uid);
    const creator = run.spec.creator;
    const key = creator === undefined ? undefined : creatorKey(creator);
    this.settled.set(uid, { run, reason, creator: key, ...runOrder(run) });
    addCount(this.reasons, reason, 1);
    if (creator !== undefined && key !== undefined) {
      const known = this.creators.get(key);
      if (known === undefined) this.creators.set(key, { creator, runs: 1 });
      else known.runs += 1;
    }
  }

  get empty(): boolean {
    return this.open.size === 0 && this.settled.size === 0;
  }
}

/**
 * What the scheduler remembers of each Runtime's Pending Runs between passes, so that a
 * pass plans only the Runs that can change its decisions (kube-scheduler's queues do the
 * same for Pods): a Run its last pass left waiting with nothing to write (its reason
 * already stored, or silent) is `settled`, and stays out of later passes until it changes
 * (its watch event opens it again) or the Runtime's facts do (passSignature: then a pass
 * plans every Pending Run again). When room frees, the oldest Runs settled waiting for
 * room are planned with the open ones, so binds stay oldest first. Fed by the informer's
 * Run events, which the work queue turns into passes.
 */
export class RunBook {
  readonly #runtimes = new Map<string, RuntimeRuns>();

  /** A Run of the Runtime `key` was added or changed: planned again at its next pass. */
  changed(key: string, run: ReadonlyDeep<Run>): void {
    const runtime = this.#runtime(key);
    const uid = run.metadata.uid ?? '';
    runtime.unsettle(uid);
    runtime.open.set(uid, run);
  }

  deleted(key: string, run: ReadonlyDeep<Run>): void {
    const runtime = this.#runtimes.get(key);
    if (runtime === undefined) return;
    const uid = run.metadata.uid ?? '';
    runtime.unsettle(uid);
    runtime.open.delete(uid);
    if (runtime.empty) this.#runtimes.delete(key);
  }

  signature(key: string): string | undefined {
    return this.#runtimes.get(key)?.signature;
  }

  /** Runs to plan: changed or not settled since the last pass. */
  open(key: string): ReadonlyDeep<Run>[] {
    return [...(this.#runtimes.get(key)?.open.values() ?? [])];
  }

  /**
   * Opens the `count` oldest settled Runs that wait for room (a slot or the namespace's cap),
   * and returns them: the Runs a pass with that much room binds before any younger one.
   */
  openOldestWaitingForRoom(key: string, count: number): ReadonlyDeep<Run>[] {
    const runtime = this.#runtimes.get(key);
    if (runtime === undefined || count <= 0) return [];
    const oldest = [...runtime.settled.values()]
      .filter((settled) => ROOM_REASONS.has(settled.reason))
      .sort(oldestFirst)
      .slice(0, count);
    for (const { run } of oldest) this.changed(key, run);
    return oldest.map(({ run }) => run);
  }

  /** The recorded creators of the settled Runs, one per creatorKey. */
  settledCreators(key: string): ReadonlyDeep<RunCreator>[] {
    return [...(this.#runtimes.get(key)?.creators.values() ?? [])].map(({ creator }) => creator);
  }

  /** Settled Runs, and how many per reason. */
  settledCounts(key: string): { runs: number; byReason: ReadonlyMap<string, number> } {
    const runtime = this.#runtimes.get(key);
    return { runs: runtime?.settled.size ?? 0, byReason: runtime?.reasons ?? new Map() };
  }

  /** Forgets what was settled: the next plan is of every Pending Run. */
  unsettleAll(key: string): void {
    const runtime = this.#runtimes.get(key);
    if (runtime === undefined) return;
    for (const [uid, { run }] of runtime.settled) {
      runtime.unsettle(uid);
      runtime.open.set(uid, run);
    }
    runtime.signature = undefined;
  }

  /**
   * What a pass planned (`planned`, as it read them) and which of them it left settled:
   * those are settled unless they changed meanwhile (a newer version came in); the others
   * stay open while `pending`, and are dropped when not (bound, ended: their next event
   * opens them again if they are Pending again).
   */
  record(
    key: string,
    signature: string,
    planned: Iterable<ReadonlyDeep<Run>>,
    settled: ReadonlyMap<string, string>,
    pending: (run: ReadonlyDeep<Run>) => boolean,
  ): void {
    const runtime = this.#runtime(key);
    runtime.signature = signature;
    for (const run of planned) {
      const uid = run.metadata.uid ?? '';
      const current = runtime.open.get(uid);
      if (current !== undefined && current !== run) continue;
      const reason = settled.get(uid);
      if (reason !== undefined) {
        runtime.open.delete(uid);
        runtime.settle(uid, run, reason);
      } else if (pending(run)) runtime.open.set(uid, run);
      else runtime.open.delete(uid);
    }
    if (runtime.empty) this.#runtimes.delete(key);
  }

  #runtime(key: string): RuntimeRuns {
    let runtime = this.#runtimes.get(key);
    if (runtime === undefined) this.#runtimes.set(key, (runtime = new RuntimeRuns()));
    return runtime;
  }
}

/** One key per recorded creator (user and groups, in their order): its right is reviewed once per pass. */
export function creatorKey(creator: ReadonlyDeep<RunCreator>): string {
  return JSON.stringify([creator.username, creator.groups ?? []]);
}

/** A Run's place in the order placement binds in. */
export function runOrder(run: ReadonlyDeep<Run>): RunOrder {
  return { createdMs: Date.parse(run.metadata.creationTimestamp ?? ''), name: run.metadata.name ?? '' };
}

function addCount(counts: Map<string, number>, key: string, delta: number): void {
  const count = (counts.get(key) ?? 0) + delta;
  if (count === 0) counts.delete(key);
  else counts.set(key, count);
}

/** The facts of a Runtime that decide how a settled Run waits (see RunBook). */
export interface PassFacts {
  runtimeExists: boolean;
  /** The block policy's reason when it refuses the Runtime's Runs. */
  blocked: string | undefined;
  /** The review of each recorded creator (creatorKey -> access), as far as it decides a Run's wait. */
  access: ReadonlyMap<string, { kind: string }>;
  /** The plan's tail (Plan.tail). */
  tail: string;
}

/**
 * The settled Runs of a pass with the same signature as the last wait exactly as they did;
 * a different one means some may not, and the pass plans every Pending Run.
 */
export function passSignature(facts: PassFacts): string {
  const access = [...facts.access].map(([creator, { kind }]) => [creator, kind]).sort(([a = ''], [b = '']) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([facts.runtimeExists, facts.blocked ?? null, access, facts.tail]);
}
