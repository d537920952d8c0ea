import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Watch } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, CONDITION_TYPES, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase, findCondition, holdsCapacity, isTerminal } from '@kruntimes/run-state';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the shared integration environment of the scheduler (real runtimed, local node, controller-manager)
import { admin, objects } from '../../scheduler/test/environment.ts';

interface Epoch {
  attempt: number;
  podUID: string;
}

/**
 * Watches every Run of a namespace through all of a test and checks, on every version the
 * watch delivers, the invariants of recovery:
 * - an attempt never goes back, and a new attempt is bound only after the old assignment
 *   was cleared (the requeue that follows the fence): never two epochs of one Run UID
 *   serving at the same time as far as the API says;
 * - no Pod ever holds more Runs than its capacity;
 * - which epochs were ever Ready=True, and which Runs went through Recovering.
 */
export class RecoveryObserver {
  /** Runtime name -> Runs per Pod. */
  readonly capacity: ReadonlyMap<string, number>;
  readonly current = new Map<string, Run>();
  readonly violations: string[] = [];
  /** Errors of the watch; each one restarted it (bounded). */
  readonly watchErrors: unknown[] = [];
  restarts = 0;
  /** Run UID -> every epoch seen Ready=True, in order. */
  readonly servingEpochs = new Map<string, Epoch[]>();
  /** Run UID -> every attempt seen. */
  readonly attempts = new Map<string, number[]>();
  /** Run UIDs that were ever marked Recovering. */
  readonly recovering = new Set<string>();
  readonly #lastEpoch = new Map<string, { epoch: Epoch | undefined; clearedSince: boolean }>();
  #stopped = false;
  #abort: () => void = () => undefined;

  private constructor(capacity: ReadonlyMap<string, number>) {
    this.capacity = capacity;
  }

  static async start(namespace: string, capacity: ReadonlyMap<string, number>): Promise<RecoveryObserver> {
    const observer = new RecoveryObserver(capacity);
    await observer.#watch(namespace);
    return observer;
  }

  /**
   * List, then watch from the list's resourceVersion. A watch that fails (a loaded API
   * server times it out) is started again from a fresh list; what happened in between is
   * unknown, so the epoch history restarts there (no false alarm, no check across the gap).
   */
  async #watch(namespace: string): Promise<void> {
    const list = (await objects.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural: RUN_PLURAL })) as {
      items: Run[];
      metadata: { resourceVersion: string };
    };
    this.#lastEpoch.clear();
    this.current.clear();
    for (const run of list.items) this.apply('ADDED', run);
    const request = await new Watch(admin).watch(
      `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace}/${RUN_PLURAL}`,
      { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: false },
      (type: string, run: Run) => {
        this.apply(type, run);
      },
      (error: unknown) => {
        if (this.#stopped) return;
        if (error !== undefined && error !== null) this.watchErrors.push(error);
        this.restarts += 1;
        if (this.restarts > 20) return;
        this.#watch(namespace).catch((restartError: unknown) => this.watchErrors.push(restartError));
      },
    );
    this.#abort = () => {
      request.abort();
    };
  }

  apply(type: string, run: Run): void {
    const uid = run.metadata.uid ?? '';
    const name = run.metadata.name ?? '';
    if (type === 'DELETED') this.current.delete(uid);
    else this.current.set(uid, run);
    const status = run.status ?? {};
    const attempt = status.attempt ?? 0;
    const attempts = this.attempts.get(uid) ?? [];
    const previousAttempt = attempts.at(-1);
    if (previousAttempt !== undefined && attempt < previousAttempt)
      this.violations.push(`${name}: attempt went back from ${String(previousAttempt)} to ${String(attempt)}`);
    if (previousAttempt !== attempt) attempts.push(attempt);
    this.attempts.set(uid, attempts);

    const ready = findCondition(status.conditions, CONDITION_TYPES.ready);
    if (ready?.reason === 'Recovering') this.recovering.add(uid);
    const epoch = status.assignedPodUID === undefined ? undefined : { attempt, podUID: status.assignedPodUID };
    const last = this.#lastEpoch.get(uid) ?? { epoch: undefined, clearedSince: true };
    if (epoch === undefined) {
      last.clearedSince = true;
    } else if (!sameEpoch(last.epoch, epoch)) {
      // A different epoch is legal only after the old assignment was cleared (the requeue after the fence).
      if (last.epoch !== undefined && !last.clearedSince) {
        this.violations.push(
          `${name}: epoch ${JSON.stringify(last.epoch)} replaced by ${JSON.stringify(epoch)} without a requeue in between`,
        );
      }
      last.epoch = epoch;
      last.clearedSince = false;
    }
    this.#lastEpoch.set(uid, last);
    if (epoch !== undefined && ready?.status === 'True' && currentPhase(run) === 'Ready') {
      const serving = this.servingEpochs.get(uid) ?? [];
      const latest = serving.at(-1);
      if (!sameEpoch(latest, epoch)) serving.push(epoch);
      this.servingEpochs.set(uid, serving);
    }

    const held = new Map<string, { count: number; runtime: string }>();
    for (const r of this.current.values()) {
      const podUID = r.status?.assignedPodUID;
      const cleanup = r.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true;
      if (podUID !== undefined && holdsCapacity(currentPhase(r), cleanup))
        held.set(podUID, { count: (held.get(podUID)?.count ?? 0) + 1, runtime: r.spec.runtime });
    }
    for (const [podUID, { count, runtime }] of held) {
      const capacity = this.capacity.get(runtime) ?? 1;
      if (count > capacity)
        this.violations.push(
          `Pod ${podUID} held ${String(count)} Runs (capacity ${String(capacity)}) after ${type} ${name}@${run.metadata.resourceVersion ?? ''}`,
        );
    }
  }

  /** Runs neither Ready (condition True) nor terminal: each must settle within the test's bound. */
  unsettled(): string[] {
    return [...this.current.values()]
      .filter((run) => {
        const phase = currentPhase(run);
        return (
          !isTerminal(phase) && !(phase === 'Ready' && findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.status === 'True')
        );
      })
      .map((run) => run.metadata.name ?? '');
  }

  stop(): void {
    this.#stopped = true;
    this.#abort();
  }
}

function sameEpoch(a: Epoch | undefined, b: Epoch): boolean {
  return a?.attempt === b.attempt && a.podUID === b.podUID;
}

interface LogLine {
  msg?: string;
  runUid?: string;
  attempt?: number;
  registrationId?: string;
}

/**
 * The registrations each Runtime Server still holds per Run UID, from every Runtime Server
 * log of the node (the log directory is `<ns>_<pod>_<podUID>`), limited to Pods whose
 * processes still run (`livePodUIDs`: Pods of the API plus known zombies).
 */
export async function liveRegistrations(
  stateDir: string,
  namespace: string,
  livePodUIDs: ReadonlySet<string>,
): Promise<Map<string, string[]>> {
  const byRun = new Map<string, string[]>();
  const logs = join(stateDir, 'logs');
  for (const dir of await readdir(logs).catch(() => [])) {
    if (!dir.startsWith(`${namespace}_`)) continue;
    const podUID = dir.slice(dir.lastIndexOf('_') + 1);
    if (!livePodUIDs.has(podUID)) continue;
    const text = await readFile(join(logs, dir, 'runtime-server.log'), 'utf8').catch(() => '');
    const live = new Map<string, string>();
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as LogLine;
      if (entry.registrationId === undefined || entry.runUid === undefined) continue;
      if (entry.msg === 'registered') live.set(entry.registrationId, entry.runUid);
      if (entry.msg === 'unregistered' || entry.msg === 'registration failed to load') live.delete(entry.registrationId);
    }
    for (const runUid of live.values()) byRun.set(runUid, [...(byRun.get(runUid) ?? []), podUID]);
  }
  return byRun;
}
