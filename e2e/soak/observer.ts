import { Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase, holdsCapacity } from '@kruntimes/run-state';
import { LastPhases } from '@kruntimes/testing';
import type { AttemptRise } from './planned.ts';

/**
 * Every version of every Run of the namespace as the watch delivers it, checked as it comes:
 * no Pod holds more Runs than its Runtime allows, an attempt never goes back, and a new
 * epoch (attempt, Pod) is bound only after the old assignment was cleared. A watch that
 * ends (kube-apiserver restarted, etcd frozen) is started again from a fresh list.
 */
export class RunObserver {
  readonly violations: string[] = [];
  readonly current = new Map<string, Run>();
  readonly created = new Set<string>();
  /** The last phase of every Run seen, deleted ones included (the report counts by it). */
  readonly lastPhases = new LastPhases();
  /** Every rise of an attempt, with the planned moves that came with it (planned.ts checks them). */
  readonly attemptRises: AttemptRise[] = [];
  restarts = 0;
  readonly #plannedMoves = new Map<string, number>();
  readonly #capacity: ReadonlyMap<string, number>;
  readonly #attempt = new Map<string, number>();
  readonly #epoch = new Map<string, { key: string | undefined; clearedSince: boolean }>();
  #abort: () => void = () => undefined;
  #stopped = false;

  readonly kubeConfig: KubeConfig;
  readonly namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string, capacity: ReadonlyMap<string, number>) {
    this.kubeConfig = kubeConfig;
    this.namespace = namespace;
    this.#capacity = capacity;
  }

  async start(): Promise<void> {
    const path = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${this.namespace}/${RUN_PLURAL}`;
    const request = await new Watch(this.kubeConfig).watch(
      path,
      { allowWatchBookmarks: false },
      (type: string, run: Run) => {
        this.#apply(type, run);
      },
      () => {
        if (this.#stopped || this.restarts >= 500) return;
        this.restarts += 1;
        // Bounded: the API server may be down for a while; try again every second.
        setTimeout(() => {
          this.start().catch(() => {
            this.restarts += 1;
          });
        }, 1_000);
      },
    );
    this.#abort = () => {
      request.abort();
    };
  }

  stop(): void {
    this.#stopped = true;
    this.#abort();
  }

  #apply(type: string, run: Run): void {
    const uid = run.metadata.uid ?? '';
    const name = run.metadata.name ?? '';
    this.created.add(uid);
    this.lastPhases.observe(type, run);
    if (type === 'DELETED') {
      this.current.delete(uid);
      return;
    }
    this.current.set(uid, run);
    const attempt = run.status?.attempt ?? 0;
    const previous = this.#attempt.get(uid);
    if (previous !== undefined && attempt < previous)
      this.violations.push(`${name}: attempt went back from ${String(previous)} to ${String(attempt)}`);
    this.#attempt.set(uid, Math.max(previous ?? 0, attempt));
    const plannedMoves = run.status?.plannedMoves ?? 0;
    const previousMoves = this.#plannedMoves.get(uid) ?? 0;
    if (previous !== undefined && attempt > previous)
      this.attemptRises.push({ run: name, at: Date.now(), from: previous, to: attempt, plannedMoves: plannedMoves - previousMoves });
    this.#plannedMoves.set(uid, Math.max(previousMoves, plannedMoves));

    const podUID = run.status?.assignedPodUID;
    const key = podUID === undefined ? undefined : `${String(attempt)}@${podUID}`;
    const last = this.#epoch.get(uid) ?? { key: undefined, clearedSince: true };
    if (key === undefined) last.clearedSince = true;
    else if (key !== last.key) {
      if (last.key !== undefined && !last.clearedSince)
        this.violations.push(`${name}: epoch ${last.key} replaced by ${key} without the assignment cleared in between`);
      last.key = key;
      last.clearedSince = false;
    }
    this.#epoch.set(uid, last);

    const held = new Map<string, { count: number; runtime: string }>();
    for (const r of this.current.values()) {
      const pod = r.status?.assignedPodUID;
      if (pod === undefined) continue;
      if (!holdsCapacity(currentPhase(r), r.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true)) continue;
      held.set(pod, { count: (held.get(pod)?.count ?? 0) + 1, runtime: r.spec.runtime });
    }
    for (const [pod, { count, runtime }] of held) {
      const capacity = this.#capacity.get(runtime) ?? 1;
      if (count > capacity) this.violations.push(`Pod ${pod} held ${String(count)} Runs of ${runtime} (capacity ${String(capacity)})`);
    }
  }
}
