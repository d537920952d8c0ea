import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, DEFAULTS, LABELS, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Run, RunStatus, Runtime } from '@kruntimes/api';
import { Controller, SharedInformer, isPodReady, objectKey, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReadonlyDeep, ReconcileResult } from '@kruntimes/controller-runtime';
import { currentPhase, holdsCapacity, transition } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';
import { RUNTIME_COMPONENT, podCapacity } from '@kruntimes/runtime-workload';
import { AssumeCache } from './assume-cache.ts';
import { SchedulerMetrics } from './metrics.ts';
import { planPlacement } from './placement.ts';
import type { Decision, PodInfo, RunInfo } from './placement.ts';

export type RunObject = Run & KubernetesObject;
export type RuntimeObject = Runtime & KubernetesObject;

export interface SchedulerOptions {
  kubeConfig: KubeConfig;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  logger: ControllerLogger;
  metrics?: SchedulerMetrics;
  /** Runtimes placed in parallel (one Runtime is never placed by two workers at once). */
  workers?: number;
  /** Status writes in flight within one Runtime's pass. */
  bindConcurrency?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /** How long a bind whose write outcome is unknown keeps its unit (see AssumeCache). Default 30 s. */
  uncertainBindTtlMs?: number;
}

/**
 * Binds Pending Runs to ready Runtime Pods. The unit of work is a Runtime
 * (`namespace/runtimeName`): one pass plans all of its Pending Runs against all of its
 * Pods, oldest first, and the work queue guarantees that no two passes of one Runtime
 * overlap, so capacity is decided in one place. Any Run, Pod or Runtime event enqueues
 * its Runtime; a pass that finds nothing to do writes nothing, and nothing is polled,
 * except a Run in retry backoff, which is looked at again when its `notBefore` passes.
 *
 * Every write is a status replace fenced on the Run's resourceVersion, built by the
 * run-state machine (`Bind`, `Unschedulable`, `CancelBeforeAssignment`). Binds are
 * assumed before they are written (see AssumeCache), so the next pass counts them even
 * before the watch delivers them. Run this only while holding the leader Lease.
 */
export class Scheduler {
  readonly metrics: SchedulerMetrics;
  readonly #options: SchedulerOptions;
  readonly #custom: CustomObjectsApi;
  readonly #runs: SharedInformer<RunObject>;
  readonly #runtimes: SharedInformer<RuntimeObject>;
  readonly #pods: SharedInformer<V1Pod>;
  readonly #controller: Controller;
  readonly #assume = new AssumeCache();
  readonly #now: () => number;
  readonly #bindConcurrency: number;
  readonly #uncertainBindTtlMs: number;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.metrics = options.metrics ?? new SchedulerMetrics();
    this.#now = options.now ?? Date.now;
    this.#bindConcurrency = Math.max(1, options.bindConcurrency ?? 16);
    this.#uncertainBindTtlMs = options.uncertainBindTtlMs ?? 30_000;
    const { kubeConfig, namespace, logger } = options;
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const custom = this.#custom;
    const prefix = namespace === undefined ? '' : `/namespaces/${namespace}`;
    const customList =
      <T extends KubernetesObject>(plural: string) =>
      (): Promise<KubernetesListObject<T>> =>
        (namespace === undefined
          ? custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural })
          : custom.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural })) as Promise<
          KubernetesListObject<T>
        >;
    this.#runs = new SharedInformer<RunObject>({
      name: 'runs',
      kubeConfig,
      path: `/apis/${API_GROUP}/${API_VERSION}${prefix}/${RUN_PLURAL}`,
      list: customList<RunObject>(RUN_PLURAL),
      logger,
    });
    this.#runtimes = new SharedInformer<RuntimeObject>({
      name: 'runtimes',
      kubeConfig,
      path: `/apis/${API_GROUP}/${API_VERSION}${prefix}/${RUNTIME_PLURAL}`,
      list: customList<RuntimeObject>(RUNTIME_PLURAL),
      logger,
    });
    const podSelector = `${LABELS.component}=${RUNTIME_COMPONENT},${LABELS.runtime}`;
    this.#pods = new SharedInformer<V1Pod>({
      name: 'runtime-pods',
      kubeConfig,
      path: `/api/v1${prefix}/pods`,
      labelSelector: podSelector,
      list: () =>
        namespace === undefined
          ? core.listPodForAllNamespaces({ labelSelector: podSelector })
          : core.listNamespacedPod({ namespace, labelSelector: podSelector }),
      logger,
    });
    this.#controller = new Controller({
      name: 'scheduler',
      logger,
      workers: options.workers ?? 2,
      reconcile: (key) => this.reconcile(key),
    });

    const enqueue = (key: string | undefined): void => {
      if (key !== undefined) this.#controller.enqueue(key);
    };
    const runChanged = (run: ReadonlyDeep<RunObject>): void => {
      this.#assume.observe(run.metadata.uid ?? '', run.metadata.resourceVersion);
      enqueue(runtimeKeyOfRun(run));
    };
    this.#runs.addEventHandler({
      add: runChanged,
      update: runChanged,
      delete: (run) => {
        this.#assume.deleted(run.metadata.uid ?? '');
        enqueue(runtimeKeyOfRun(run));
      },
    });
    this.#runtimes.enqueueTo(enqueue);
    this.#pods.enqueueTo(enqueue, (pod) => {
      const runtime = pod.metadata?.labels?.[LABELS.runtime];
      return runtime === undefined ? undefined : `${pod.metadata?.namespace ?? ''}/${runtime}`;
    });
  }

  /** Fills the caches, then starts placing: the first pass sees complete caches. */
  async start(): Promise<void> {
    await Promise.all([this.#runs.start(), this.#runtimes.start(), this.#pods.start()]);
    this.#controller.start();
  }

  async stop(): Promise<void> {
    await this.#controller.stop();
    await Promise.all([this.#runs.stop(), this.#runtimes.stop(), this.#pods.stop()]);
  }

  /** One placement pass over a Runtime's Pending Runs. */
  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const runtime = this.#runtimes.get(name, namespace);
    const runObjects = this.#runs
      .list(namespace)
      .map(plainRun)
      .filter((run) => run.spec.runtime === name);
    const byUID = new Map(runObjects.map((run) => [run.metadata.uid ?? '', run]));
    // Whole seconds: the state machine compares notBefore with the RFC 3339 `now` it
    // writes, so the plan must use the very same instant.
    const nowMs = Math.floor(this.#now() / 1000) * 1000;
    const assumptions = this.#assume.snapshot(key, (uid) => byUID.get(uid)?.metadata.resourceVersion, this.#now());
    const plan = planPlacement({
      runtimeExists: runtime !== undefined && runtime.metadata.deletionTimestamp === undefined,
      runsPerPod: runtime?.spec.runs ?? DEFAULTS.runsPerPod,
      pods: this.#pods
        .list(namespace)
        .filter((pod) => pod.metadata?.labels?.[LABELS.runtime] === name)
        .map(podInfo),
      runs: runObjects.map(runInfo),
      assumed: assumptions.assumed,
      nowMs,
    });
    this.metrics.passes += 1;
    this.metrics.pendingByRuntime.set(key, plan.unbound);

    const now = rfc3339(nowMs);
    const failures: unknown[] = [];
    await forEachLimited(plan.decisions, this.#bindConcurrency, async (decision) => {
      const run = byUID.get(decision.run.uid);
      if (run === undefined) return;
      try {
        await this.#apply(key, run, decision, now);
      } catch (error) {
        failures.push(error);
      }
    });
    if (failures.length > 0) {
      throw new AggregateError(failures, `${failures.length} of ${plan.decisions.length} writes for Runtime ${key} failed`);
    }
    // Look again when a backoff ends or an uncertain bind expires; otherwise only events wake this Runtime.
    const wakeups = [
      plan.retryAtMs === undefined ? undefined : plan.retryAtMs - nowMs + 1000,
      assumptions.nextExpiryMs === undefined ? undefined : assumptions.nextExpiryMs - this.#now() + 1,
    ].filter((ms) => ms !== undefined);
    return wakeups.length === 0 ? undefined : { requeueAfterMs: Math.max(0, Math.min(...wakeups)) };
  }

  async #apply(key: string, run: ReadonlyDeep<Run>, decision: Decision, now: string): Promise<void> {
    const event: RunEvent =
      decision.action === 'bind'
        ? { type: 'Bind', pod: decision.pod.name, podUID: decision.pod.uid }
        : decision.action === 'cancel'
          ? { type: 'CancelBeforeAssignment' }
          : { type: 'Unschedulable', reason: decision.reason, message: decision.message };
    const result = transition({ run: structuredClone(run) as Run, event, writer: 'scheduler', now });
    if (!result.ok) {
      // The plan was made from this very object, so a refusal is a bug in the plan.
      // Retrying cannot help; the Run's next change enqueues its Runtime again.
      this.#options.logger.error(
        { run: objectKey(run), err: result.error, action: decision.action },
        'the state machine refused the planned write',
      );
      return;
    }
    const uid = run.metadata.uid ?? '';
    const fencedOn = run.metadata.resourceVersion ?? '';
    if (decision.action === 'bind') this.#assume.assume(key, uid, decision.pod.uid, fencedOn);
    const started = performance.now();
    try {
      await this.#writeStatus(run, result.status);
    } catch (error) {
      if (error instanceof ApiException && error.code >= 400 && error.code < 500) {
        // A definite refusal: the write did not happen, so neither did the bind.
        this.#assume.forget(uid);
        if (error.code === 409) {
          // The Run changed since the cache showed it; its watch event enqueues the
          // Runtime again, so this is not an error of the pass.
          if (decision.action === 'bind') this.metrics.bindConflicts += 1;
          return;
        }
        if (error.code === 404) return;
      } else if (decision.action === 'bind') {
        // Outcome unknown: the bind may have landed. Keep counting it, for a bounded time.
        this.#assume.uncertain(uid, this.#now() + this.#uncertainBindTtlMs);
      }
      throw error;
    }
    if (decision.action === 'bind') {
      this.metrics.binds += 1;
      this.metrics.bindWrite.observe((performance.now() - started) / 1000);
      const created = Date.parse(run.metadata.creationTimestamp ?? '');
      if (!Number.isNaN(created)) this.metrics.bindLatency.observe(Math.max(0, Date.now() - created) / 1000);
    }
  }

  async #writeStatus(run: ReadonlyDeep<Run>, status: RunStatus): Promise<void> {
    const { name = '', namespace = '', uid, resourceVersion } = run.metadata;
    await this.#custom.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: RUN_PLURAL,
      name,
      // resourceVersion fences the write: a Run changed since it was read gets 409.
      body: { apiVersion: run.apiVersion, kind: run.kind, metadata: { name, namespace, uid, resourceVersion }, spec: run.spec, status },
    });
  }
}

/**
 * Custom objects arrive as parsed JSON, so their timestamps are strings as `Run` says,
 * not the `Date`s of client-node's V1ObjectMeta that KubernetesObject claims.
 */
function plainRun(run: ReadonlyDeep<RunObject>): ReadonlyDeep<Run> {
  return run as unknown as ReadonlyDeep<Run>;
}

function runtimeKeyOfRun(run: ReadonlyDeep<RunObject>): string {
  return `${run.metadata.namespace ?? ''}/${run.spec.runtime}`;
}

function podInfo(pod: ReadonlyDeep<V1Pod>): PodInfo {
  return {
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    ready: isPodReady(pod) && (pod.status?.podIP ?? '') !== '',
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    capacity: podCapacity(pod),
  };
}

export function runInfo(run: ReadonlyDeep<Run>): RunInfo {
  const phase = currentPhase({ status: { ...(run.status?.phase === undefined ? {} : { phase: run.status.phase }) } });
  const cleanupPending = run.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true;
  return {
    uid: run.metadata.uid ?? '',
    name: run.metadata.name ?? '',
    creationTimestamp: run.metadata.creationTimestamp ?? '',
    phase,
    reason: run.status?.reason,
    assignedPodUID: run.status?.assignedPodUID,
    holdsCapacity: holdsCapacity(phase, cleanupPending),
    cancelRequested: run.spec.cancelRequested === true,
    deleting: run.metadata.deletionTimestamp !== undefined,
    notBefore: run.status?.notBefore,
  };
}

/** RFC 3339 in whole seconds, as metav1.Time serialises. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
