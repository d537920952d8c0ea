import type { PolicyRule } from '@kruntimes/api';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1ConfigMap } from '@kubernetes/client-node';
import { SOURCE_SNAPSHOT, snapshotConfigMapName } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Controller, asReconciler } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ObjectRef, ReadonlyDeep, ReconcileResult, Reconciler, SharedInformer } from '@kruntimes/controller-runtime';
import { runClient, writeTransition } from '@kruntimes/run-client';
import type { RunStatusWriter } from '@kruntimes/run-client';
import type { RunEvent } from '@kruntimes/run-state';
import {
  decideSnapshotConfigMap,
  decideSource,
  needsSnapshot,
  runOwnerReference,
  snapshotConfigMap,
  sourceDigest,
} from './decide-snapshot.ts';
import type { ConfigMapView, SourceRead } from './decide-snapshot.ts';

/**
 * What the snapshot controller does through the API, besides what its host (the scheduler)
 * already may (read Runs, write their status): read a Run's source ConfigMap, create the
 * snapshot ConfigMap, and add an owner reference to a snapshot another Run already made.
 */
export const SNAPSHOT_CONTROLLER_RULES: readonly PolicyRule[] = [
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create', 'update'] },
];

export interface SnapshotControllerOptions {
  kubeConfig: KubeConfig;
  /**
   * The host's Run cache (read-only; shared, so one watch serves both). It may be a
   * projection: only metadata, spec.cancelRequested, spec.origin and status.source are read
   * from it (needsSnapshot); the rest from the Run read with `runStatus.get`.
   */
  runs: Pick<SharedInformer<Run>, 'get' | 'enqueueTo'>;
  logger: ControllerLogger;
  /** How long a Run may stay Pending with an unresolvable source. Default SOURCE_SNAPSHOT.maxWaitSeconds. */
  maxWaitMs?: number;
  /** Runs snapshotted at once; default SNAPSHOT_WORKERS. */
  workers?: number;
  now?: () => number;
  /** Where a Run is read in full and status.source written; default: a Run client of kubeConfig (tests pass a fake). */
  runStatus?: RunStatusWriter;
}

/**
 * Runs snapshotted at once. Each snapshot of an inline source is one status write that waits on the API server, and no
 * Run binds before its snapshot: with 2, a burst of 200 task Runs on a 2-core machine was snapshotted at about 10 Runs/s,
 * the last one some 20 to 30 s after the burst, slower than an 8-Pod pool frees slots (measured with the elastic-pool bench).
 */
export const SNAPSHOT_WORKERS = 8;

/**
 * The `source-snapshot` controller (key `namespace/run`), run by the scheduler while it
 * leads: a Pending Run without status.source gets its execution snapshot before the
 * scheduler may bind it (placement's snapshot gate). An inline source is hashed as it is;
 * a configMapKeyRef source is copied into an immutable ConfigMap named by its digest and
 * owned by the Run. The record (status.source) is one fenced status write through
 * run-state's SourceResolved; a source that cannot be resolved keeps the Run Pending
 * (SourceUnresolved) and, after the bounded wait, fails it (SourceFailed).
 */
export class SnapshotController {
  readonly #core: CoreV1Api;
  readonly #runClient: RunStatusWriter;
  readonly #runs: Pick<SharedInformer<Run>, 'get' | 'enqueueTo'>;
  readonly #controller: Controller;
  readonly #logger: ControllerLogger;
  readonly #now: () => number;
  readonly #maxWaitMs: number;
  /** By key, for the work queue. A Run being deleted is still snapshotted if it needs one: needsSnapshot decides, not the deletion. */
  readonly reconcile: Reconciler;

  constructor(options: SnapshotControllerOptions) {
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#maxWaitMs = options.maxWaitMs ?? SOURCE_SNAPSHOT.maxWaitSeconds * 1000;
    this.#core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.#runClient = options.runStatus ?? runClient(options.kubeConfig);
    this.#runs = options.runs;
    this.reconcile = asReconciler(this.#runs, { reconcile: (cached, ref) => this.#reconcileRun(cached, ref) }, { deleting: 'reconcile' });
    this.#controller = new Controller({
      name: 'source-snapshot',
      logger: options.logger,
      workers: options.workers ?? SNAPSHOT_WORKERS,
      reconcile: this.reconcile,
    });
    this.#runs.enqueueTo(
      (key) => {
        this.#controller.enqueue(key);
      },
      (run) => (needsSnapshot(run) ? `${run.metadata.namespace ?? ''}/${run.metadata.name ?? ''}` : undefined),
    );
  }

  /** Starts the workers; the host starts (and syncs) the shared Run cache. */
  start(): void {
    this.#controller.start();
  }

  async stop(): Promise<void> {
    await this.#controller.stop();
  }

  async #reconcileRun(cached: ReadonlyDeep<Run>, { key, namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    if (!needsSnapshot(cached)) return undefined;
    // The cache is a projection without spec.source (the host's Run projection): the full Run
    // is read here, once per snapshot, and the snapshot is decided on and fenced on it.
    const run = await this.#runClient.get(namespace, name);
    if (run === undefined || !needsSnapshot(run)) return undefined;
    const nowMs = this.#now();
    const read = (await this.#readPinnedSnapshot(run)) ?? (await this.#readSource(run));
    let decision = decideSource({ run, read, nowMs, maxWaitMs: this.#maxWaitMs });
    if (decision.action === 'snapshot' && decision.source.configMapName !== undefined) {
      const conflict = await this.#ensureSnapshotConfigMap(run, decision.source.digest, decision.text);
      if (conflict !== undefined)
        decision = decideSource({ run, read: { type: 'conflict', detail: conflict }, nowMs, maxWaitMs: this.#maxWaitMs });
    }
    let event: RunEvent;
    let requeueAfterMs: number | undefined;
    switch (decision.action) {
      case 'snapshot':
        event = { type: 'SourceResolved', source: decision.source };
        break;
      case 'wait':
        event = { type: 'SourceUnresolved', reason: decision.reason, message: decision.message };
        requeueAfterMs = decision.requeueAfterMs;
        break;
      case 'fail':
        event = { type: 'SourceFailed', reason: decision.reason, message: decision.message };
        break;
    }
    // Fenced on the version read's resourceVersion, no retry: a Run that changed or went
    // meanwhile is enqueued again by its watch event.
    const result = await writeTransition(this.#runClient, run, event, { writer: 'scheduler', now: () => rfc3339(nowMs) });
    if (!result.ok) {
      // Decided from this very object: a refusal is a bug; the Run's next change enqueues it again.
      if (result.reason === 'Refused')
        this.#logger.error({ run: key, err: result.error, event: event.type }, 'the state machine refused the snapshot write');
      return undefined;
    }
    const status = result.object.status;
    this.#logger.debug({ run: key, event: event.type, reason: status?.reason, source: status?.source }, 'source snapshot');
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /**
   * A source pinned by digest (`krt retry`) is taken from the snapshot ConfigMap of that
   * digest when it is there, intact: the user's ConfigMap may have been edited since.
   * Undefined otherwise; then the source is read as usual and must have the pinned digest.
   */
  async #readPinnedSnapshot(run: Run): Promise<SourceRead | undefined> {
    const pinned = run.spec.source.digest;
    if (pinned === undefined || run.spec.source.configMapKeyRef === undefined) return undefined;
    const existing = await this.#readConfigMap(run.metadata.namespace ?? '', snapshotConfigMapName(pinned));
    const text = existing?.data?.[SOURCE_SNAPSHOT.key];
    if (existing?.immutable !== true || text === undefined || sourceDigest(text).digest !== pinned) return undefined;
    return { type: 'text', text };
  }

  /** The inline text, or the ConfigMap key's; a missing or forbidden ConfigMap is an answer, any other error a retry. */
  async #readSource(run: Run): Promise<SourceRead> {
    const { inline, configMapKeyRef } = run.spec.source;
    if (inline !== undefined) return { type: 'text', text: inline };
    if (configMapKeyRef === undefined) return { type: 'notFound', detail: 'spec.source has neither inline nor configMapKeyRef' };
    const namespace = run.metadata.namespace ?? '';
    let configMap: V1ConfigMap;
    try {
      configMap = await this.#core.readNamespacedConfigMap({ name: configMapKeyRef.name, namespace });
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return { type: 'notFound', detail: 'the ConfigMap does not exist' };
      if (error instanceof ApiException && error.code === 403)
        return { type: 'forbidden', detail: 'the API server answered 403 Forbidden' };
      throw error;
    }
    const text = configMap.data?.[configMapKeyRef.key];
    if (text !== undefined) return { type: 'text', text };
    const binary = configMap.binaryData?.[configMapKeyRef.key] !== undefined;
    return {
      type: 'notFound',
      detail: binary ? 'the key is in binaryData; the source must be text (data)' : 'the ConfigMap has no such key',
    };
  }

  /**
   * Creates the snapshot ConfigMap, or makes an existing one of the same name (the same
   * source, another Run's or an earlier try's) owned by this Run too after checking it
   * holds exactly these bytes. Returns what is wrong with an existing one that does not.
   */
  async #ensureSnapshotConfigMap(run: Run, digest: string, text: string): Promise<string | undefined> {
    const namespace = run.metadata.namespace ?? '';
    const name = snapshotConfigMapName(digest);
    const existing = await this.#readConfigMap(namespace, name);
    const decision = decideSnapshotConfigMap(existing === undefined ? undefined : view(existing), name, text, run.metadata.uid ?? '');
    switch (decision.action) {
      case 'use':
        return undefined;
      case 'conflict':
        return decision.detail;
      case 'create':
        try {
          await this.#core.createNamespacedConfigMap({ namespace, body: snapshotConfigMap(run, { digest }, text) });
        } catch (error) {
          // Made meanwhile (another Run with this source): decided again from what is there.
          if (error instanceof ApiException && error.code === 409) throw new Error(`ConfigMap ${namespace}/${name} was created meanwhile`);
          throw error;
        }
        return undefined;
      case 'adopt': {
        // Read just now, not a cache object; only the owners change (metadata of an immutable ConfigMap may).
        const body: V1ConfigMap = structuredClone(existing ?? {});
        body.metadata ??= {};
        body.metadata.ownerReferences = [...(body.metadata.ownerReferences ?? []), runOwnerReference(run)];
        // Fenced on the resourceVersion read: a concurrent change gets 409 and a retry.
        await this.#core.replaceNamespacedConfigMap({ name, namespace, body });
        return undefined;
      }
    }
  }

  async #readConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    try {
      return await this.#core.readNamespacedConfigMap({ name, namespace });
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }
}

function view(configMap: ReadonlyDeep<V1ConfigMap>): ConfigMapView {
  return {
    ...(configMap.immutable === undefined ? {} : { immutable: configMap.immutable }),
    ...(configMap.data === undefined ? {} : { data: configMap.data }),
    ...(configMap.binaryData === undefined ? {} : { binaryData: configMap.binaryData }),
    ...(configMap.metadata?.ownerReferences === undefined ? {} : { ownerReferences: configMap.metadata.ownerReferences }),
  };
}

/** RFC 3339 in whole seconds, as metav1.Time serialises. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
