import type { Run, RunPhase } from '@kruntimes/api';
import { currentPhase, isTerminal } from '@kruntimes/run-state';

/** The last version of one Run the soak saw (from the watch, a DELETED event's object included). */
export interface LastSeen {
  uid: string;
  name: string;
  phase: RunPhase;
  /** A DELETED event was seen for it. */
  deleted: boolean;
}

/**
 * The last phase of every Run UID ever seen, kept after the Run is deleted: finished Runs
 * are collected (the per-Runtime history keeps only the newest), so the Runs present at
 * the end are a fraction of those created. Pure; fed every watch event and the final list.
 */
export class LastPhases {
  readonly #byUid = new Map<string, LastSeen>();

  observe(type: string, run: Pick<Run, 'metadata' | 'status'>): void {
    const uid = run.metadata.uid ?? '';
    const previous = this.#byUid.get(uid);
    this.#byUid.set(uid, {
      uid,
      name: run.metadata.name ?? '',
      phase: currentPhase(run),
      // A list after the watch saw it deleted cannot bring it back.
      deleted: type === 'DELETED' || previous?.deleted === true,
    });
  }

  /** By name (the soak's task names are never reused); the latest UID wins if one were. */
  byName(): Map<string, LastSeen> {
    return new Map([...this.#byUid.values()].map((seen) => [seen.name, seen]));
  }
}

/** The task Runs the soak created, each counted once. */
export interface TaskTally {
  created: number;
  /** Created Runs by the last phase seen; `unseen` for one no event ever showed. */
  byLastPhase: Map<RunPhase | 'unseen', number>;
  /**
   * Never seen terminal but gone at the end: only finished Runs are collected, so each
   * finished; the watch (down meanwhile: kube-apiserver restarted, etcd frozen) missed
   * its terminal version, and its end is not known.
   */
  finishedUnseen: string[];
  /** Never seen terminal and still there, not terminal, at the end: lost. */
  lost: string[];
}

/**
 * Counts every created task Run by the last phase seen. `present`: the names a list at
 * the end (after the settle bound) still holds. A Run is lost when it was created and is
 * neither terminal nor gone (collected, hence finished) at the end.
 */
export function tallyTasks(created: readonly string[], seen: ReadonlyMap<string, LastSeen>, present: ReadonlySet<string>): TaskTally {
  const byLastPhase = new Map<RunPhase | 'unseen', number>();
  const finishedUnseen: string[] = [];
  const lost: string[] = [];
  for (const name of created) {
    const last = seen.get(name);
    const phase = last?.phase ?? 'unseen';
    byLastPhase.set(phase, (byLastPhase.get(phase) ?? 0) + 1);
    if (last !== undefined && isTerminal(last.phase)) continue;
    if (present.has(name) && last?.deleted !== true) lost.push(name);
    else finishedUnseen.push(name);
  }
  return { created: created.length, byLastPhase, finishedUnseen, lost };
}
