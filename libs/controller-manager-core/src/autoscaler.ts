import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { API_GROUP_VERSION, DEFAULTS, EVENT_REASONS, LABELS, POD_ANNOTATIONS, RUNTIME_KIND } from '@kruntimes/api';
import type { Runtime } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type {
  ControllerLogger,
  EventRecorder,
  ObjectReconciler,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import { decidePool, fixedPoolAnnotations, isForeignMark, markedAtMs, resolveScaling } from '@kruntimes/pool-core';
import type { PodAnnotationChange, PoolDecision, PoolPod } from '@kruntimes/pool-core';
import { apiStatus, isConflict, isNotFound } from '@kruntimes/run-client';
import type { ObjectApi } from '@kruntimes/run-client';
import { runtimeDemand } from './caches.ts';
import type { ManagerCacheReaders } from './caches.ts';
import type { PoolDecisions } from './pool-decisions.ts';

export interface AutoscalerOptions {
  /** Runtime Pods and Runs: the demand and the Pods it sizes. */
  caches: Pick<ManagerCacheReaders, 'runs' | 'pods'>;
  /** spec.replicas, fenced on the cached version. */
  runtimes: Pick<ObjectApi<Runtime>, 'mergePatch'>;
  /** The Pods' scale-down marks and deletion costs. */
  core: Pick<CoreV1Api, 'patchNamespacedPod'>;
  /** The ScaledUp, ScaledDown and ScaleOverridden Events on the Runtime. */
  events: Pick<EventRecorder, 'event'>;
  decisions: PoolDecisions;
  logger: ControllerLogger;
  now: () => number;
  /** A Runtime's decision changed: its status is due (the runtime controller writes it). */
  onDecision: (key: string) => void;
}

/** What the autoscaler remembers of one Runtime between passes (a new leader starts without it, on the safe side). */
interface Memory {
  /** spec.replicas as this autoscaler last wrote or accepted it: anything else was set by someone else. */
  lastWritten?: number | undefined;
  /** The generation its last write made: a cache still older than it has not seen the write. */
  writtenGeneration?: number | undefined;
  /** Since when demand has needed fewer Pods (decidePool). */
  lowerSinceMs?: number | undefined;
}

/**
 * The `autoscaler` controller (key `namespace/runtime`): for a Runtime with spec.scaling, sizes spec.replicas from
 * its demand (pool-core's decidePool): marks and unmarks Pods for scale-down, keeps their deletion costs, writes
 * spec.replicas through the typed client, records Events, and hands its decision to the runtime controller, which
 * puts it in the status. Without spec.scaling it keeps deletion costs only (fixedPoolAnnotations). Run only while leading.
 *
 * "Lower since" is kept here in memory rather than derived from the Scaling condition's lastTransitionTime: that
 * condition is written later by another controller (spaced out), at whole seconds, and its time moves only when its
 * status does; and a new leader that starts the delay again removes Pods later, never earlier.
 */
export class Autoscaler implements ObjectReconciler<Runtime> {
  readonly #options: AutoscalerOptions;
  readonly #memory = new Map<string, Memory>();

  constructor(options: AutoscalerOptions) {
    this.#options = options;
  }

  gone({ key }: ObjectRef): void {
    this.#forget(key);
  }

  async reconcile(runtime: ReadonlyDeep<Runtime>, { key, namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    const pods = this.#options.caches.pods.list(namespace).filter((pod) => pod.metadata?.labels?.[LABELS.runtime] === name);
    if (runtime.spec.scaling === undefined) {
      this.#forget(key);
      // A fixed pool: no marks (one left by an earlier spec.scaling would keep the scheduler away for good), and
      // deletion costs that make a lowered spec.replicas remove the Pods that hold nothing first.
      const { heldByPod } = runtimeDemand(this.#options.caches, runtime);
      await this.#patchPods(
        namespace,
        pods,
        fixedPoolAnnotations(pods.map((pod) => poolPod(pod, heldByPod.get(pod.metadata?.uid ?? '') ?? 0))),
      );
      return undefined;
    }
    const memory = this.#memory.get(key) ?? {};
    // Our own write is not in the cache yet: its watch event reconciles again.
    if (memory.writtenGeneration !== undefined && (runtime.metadata.generation ?? 0) < memory.writtenGeneration) return undefined;

    const demand = runtimeDemand(this.#options.caches, runtime);
    const decision = decidePool({
      scaling: resolveScaling(runtime.spec.scaling),
      runsPerPod: runtime.spec.runs ?? DEFAULTS.runsPerPod,
      specReplicas: runtime.spec.replicas ?? DEFAULTS.replicas,
      lastWritten: memory.lastWritten ?? statusReplicas(runtime),
      demand: { held: demand.held, pending: runtime.spec.suspend === true ? 0 : demand.pending },
      pods: pods.map((pod) => poolPod(pod, demand.heldByPod.get(pod.metadata?.uid ?? '') ?? 0)),
      lowerSinceMs: memory.lowerSinceMs,
      nowMs: this.#options.now(),
    });
    if (decision.overridden !== undefined)
      await this.#event(runtime, 'Warning', EVENT_REASONS.scaleOverridden, decision.overridden.message);
    // Marks first: a shrink in this pass counts only Pods marked in an earlier one.
    await this.#patchPods(namespace, pods, decision.pods);
    // What it saw in spec.replicas is accepted (reported above if it was someone else's), and the lower time kept.
    this.#memory.set(key, { lastWritten: runtime.spec.replicas ?? DEFAULTS.replicas, lowerSinceMs: decision.lowerSinceMs });
    if (decision.change !== undefined) {
      const written = await this.#writeReplicas(runtime, decision);
      // Fenced out: the newer version's watch event decides again.
      if (written === undefined) return undefined;
      this.#memory.set(key, { lastWritten: decision.change.replicas, writtenGeneration: written, lowerSinceMs: decision.lowerSinceMs });
    }
    // status.desiredReplicas is what spec.replicas becomes (the API's contract); the condition says where it is heading.
    if (this.#options.decisions.set(key, { desiredReplicas: decision.replicas, condition: decision.condition }))
      this.#options.onDecision(key);
    return decision.requeueAfterMs === undefined ? undefined : { requeueAfterMs: decision.requeueAfterMs };
  }

  #forget(key: string): void {
    this.#memory.delete(key);
    if (this.#options.decisions.delete(key)) this.#options.onDecision(key);
  }

  /** spec.replicas, fenced on the version decided from; the generation written, or undefined when fenced out. */
  async #writeReplicas(runtime: ReadonlyDeep<Runtime>, decision: PoolDecision): Promise<number | undefined> {
    const change = decision.change;
    if (change === undefined) return undefined;
    const { namespace = '', name = '', resourceVersion } = runtime.metadata;
    const written = await this.#options.runtimes.mergePatch(namespace, name, {
      metadata: resourceVersion === undefined ? {} : { resourceVersion },
      spec: { replicas: change.replicas },
    });
    if (!written.ok) {
      this.#options.logger.debug(
        { runtime: `${namespace}/${name}`, reason: written.reason },
        'spec.replicas write refused; its watch event decides again',
      );
      return undefined;
    }
    this.#options.logger.debug({ runtime: `${namespace}/${name}`, replicas: change.replicas, reason: change.reason }, change.message);
    await this.#event(runtime, 'Normal', change.reason, change.message);
    return written.object.metadata.generation ?? 0;
  }

  /** Each Pod's marks and deletion cost, as a merge patch fenced on the cached version (a newer one decides again). */
  async #patchPods(namespace: string, pods: readonly ReadonlyDeep<V1Pod>[], changes: readonly PodAnnotationChange[]): Promise<void> {
    for (const change of changes) {
      const pod = pods.find((candidate) => candidate.metadata?.name === change.pod);
      const annotations: Record<string, string | null> = {};
      if (change.scaleDown !== undefined) annotations[POD_ANNOTATIONS.scaleDown] = change.scaleDown;
      if (change.deletionCost !== undefined) annotations[POD_ANNOTATIONS.deletionCost] = change.deletionCost;
      try {
        await this.#options.core.patchNamespacedPod(
          { name: change.pod, namespace, body: { metadata: { resourceVersion: pod?.metadata?.resourceVersion, annotations } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (error) {
        if (!isConflict(error) && !isNotFound(error)) throw error;
        this.#options.logger.debug(
          { pod: `${namespace}/${change.pod}`, code: apiStatus(error) },
          'Pod changed or gone before its scale-down annotations; deciding again',
        );
      }
    }
  }

  /** Best effort: the status condition is the record; a failed Event is logged. */
  async #event(runtime: ReadonlyDeep<Runtime>, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const { namespace = '', name = '', uid = '' } = runtime.metadata;
    await this.#options.events.event({
      regarding: { apiVersion: API_GROUP_VERSION, kind: RUNTIME_KIND, name, namespace, uid },
      type,
      reason,
      message,
    });
  }
}

/**
 * status.desiredReplicas as the last leader's decision, when the status was written for the current spec (after the
 * last spec.replicas write): a new leader then still sees someone else's change. Otherwise nothing is known.
 */
function statusReplicas(runtime: ReadonlyDeep<Runtime>): number | undefined {
  const status = runtime.status;
  return status?.observedGeneration !== undefined && status.observedGeneration === runtime.metadata.generation
    ? status.desiredReplicas
    : undefined;
}

function poolPod(pod: ReadonlyDeep<V1Pod>, held: number): PoolPod {
  const annotations = pod.metadata?.annotations;
  return {
    name: pod.metadata?.name ?? '',
    held,
    ready: isPodReady(pod),
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    markedAtMs: markedAtMs(annotations?.[POD_ANNOTATIONS.scaleDown]),
    foreignMark: isForeignMark(annotations?.[POD_ANNOTATIONS.scaleDown]),
    deletionCost: annotations?.[POD_ANNOTATIONS.deletionCost],
  };
}
