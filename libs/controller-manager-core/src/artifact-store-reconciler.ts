import type { CoreV1Api } from '@kubernetes/client-node';
import { ARTIFACT_STORE_REASONS, artifactNamespacePrefix, DEFAULTS, parseDurationSeconds } from '@kruntimes/api';
import type { ArtifactStore, ArtifactStoreStatus, Run } from '@kruntimes/api';
import {
  ArtifactObjects,
  ArtifactStoreResolveError,
  artifactStoreLocation,
  checkpointAttemptsNeeded,
  decideArtifactCleanup,
  readCredentials,
} from '@kruntimes/artifacts-core';
import type { ArtifactStoreCredentials, LiveRunAttempt, StoredObject } from '@kruntimes/artifacts-core';
import { RecencyBoundedMap } from '@kruntimes/controller-runtime';
import type {
  CacheReader,
  ControllerLogger,
  ObjectReconciler,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import { isKruntimesError } from '@kruntimes/errors';
import { thaw, writeStatus } from '@kruntimes/run-client';
import type { ObjectApi } from '@kruntimes/run-client';
import { isTerminal } from '@kruntimes/run-state';
import { phaseOf } from './caches.ts';
import { artifactStoreStatus } from './artifact-store-status.ts';
import type { ArtifactStorePassOutcome } from './artifact-store-status.ts';
import { rfc3339 } from './rfc3339.ts';

/** Default time between two retention passes over one ArtifactStore. */
export const DEFAULT_ARTIFACT_CLEANUP_INTERVAL_MS = 5 * 60_000;
/** Bound on the objects one pass lists under a namespace prefix. */
const MAX_LISTED_OBJECTS = 100_000;
/** Stores whose next pass time is remembered; beyond it the least recent is forgotten (it then runs early once). */
const DUE_CAPACITY = 10_000;
/** Far longer than an informer lags behind a Run's creation, far shorter than any useful retention. */
const DEFAULT_UNKNOWN_RUN_GRACE_MS = 2 * 60_000;

export interface ArtifactStoreReconcilerOptions {
  caches: { runs: CacheReader<Run> };
  /** Reads each store's credentials Secret. */
  core: Pick<CoreV1Api, 'readNamespacedSecret'>;
  artifactStores: Pick<ObjectApi<ArtifactStore>, 'replaceStatus'>;
  logger: ControllerLogger;
  now: () => number;
  /** Time between two passes over one store. Default 5 min. */
  cleanupIntervalMs?: number;
  /** Bound on one request to the object store. Default 30 s. */
  storeRequestTimeoutMs?: number;
  /** The least age of an object of a Run missing from the cache before it counts as a deleted Run's. Default 2 min. */
  unknownRunGraceMs?: number;
}

/**
 * The retention controller (key `namespace/artifactstore`): resolves the store's
 * credentials, lists `<prefix>/<namespace>/`, removes what decideArtifactCleanup says
 * (objects of deleted Runs past the retention, superseded attempts' objects), and writes
 * the Ready condition and lastCleanupTime. It runs again after the interval, sooner when
 * an object of a deleted Run reaches its retention first; a status write or any other
 * event before then does not start another pass (the next due time is kept in memory).
 * A Run UID missing from the Run cache counts as deleted once its object is older than
 * both the retention and a grace that covers a Run too new for the cache.
 */
export class ArtifactStoreReconciler implements ObjectReconciler<ArtifactStore> {
  readonly #options: ArtifactStoreReconcilerOptions;
  readonly #intervalMs: number;
  readonly #due = new RecencyBoundedMap<string, { generation: number | undefined; atMs: number }>(DUE_CAPACITY);

  constructor(options: ArtifactStoreReconcilerOptions) {
    this.#options = options;
    this.#intervalMs = options.cleanupIntervalMs ?? DEFAULT_ARTIFACT_CLEANUP_INTERVAL_MS;
  }

  gone({ key }: ObjectRef): void {
    this.#due.delete(key);
  }

  async reconcile(cached: ReadonlyDeep<ArtifactStore>, { key }: ObjectRef): Promise<ReconcileResult | undefined> {
    const generation = cached.metadata.generation;
    const now = this.#options.now();
    const due = this.#due.get(key);
    if (due !== undefined && due.generation === generation && now < due.atMs) return { requeueAfterMs: due.atMs - now };

    // Cache objects are read-only: the pass works on a copy.
    const store = thaw<ArtifactStore>(cached);
    const { outcome, nextMs } = await this.#pass(store, now);
    this.#due.set(key, { generation, atMs: now + nextMs });
    await this.#writeStatus(key, store, artifactStoreStatus(store.status, outcome, generation, rfc3339(this.#options.now())));
    return { requeueAfterMs: nextMs };
  }

  async #pass(store: ArtifactStore, now: number): Promise<{ outcome: ArtifactStorePassOutcome; nextMs: number }> {
    const retry = Math.min(this.#intervalMs, 30_000);
    let credentials: ArtifactStoreCredentials;
    try {
      credentials = await readCredentials(this.#options.core, store);
    } catch (error) {
      if (!(error instanceof ArtifactStoreResolveError)) throw error;
      const reason = error.problem === 'SecretInvalid' ? ARTIFACT_STORE_REASONS.secretInvalid : ARTIFACT_STORE_REASONS.secretNotFound;
      return { outcome: { kind: 'unavailable', reason, message: error.message }, nextMs: retry };
    }
    const namespace = store.metadata.namespace ?? '';
    const location = artifactStoreLocation(store);
    const objects = new ArtifactObjects(location, credentials, {
      maxAttempts: 2,
      requestTimeoutMs: this.#options.storeRequestTimeoutMs ?? 30_000,
      maxListedKeys: MAX_LISTED_OBJECTS,
    });
    try {
      const namespacePrefix = artifactNamespacePrefix(location.prefix, namespace);
      const listed: StoredObject[] = [];
      for await (const object of objects.list(namespacePrefix)) listed.push({ key: object.key, lastModified: object.lastModified });
      const retentionSeconds = parseDurationSeconds(store.spec.retentionAfterRunDeleted ?? DEFAULTS.artifactRetentionAfterRunDeleted) ?? 0;
      const decision = decideArtifactCleanup({
        objects: listed,
        namespacePrefix,
        runs: this.#runsOf(namespace),
        now: new Date(now),
        retentionMs: retentionSeconds * 1000,
        unknownRunGraceMs: this.#options.unknownRunGraceMs ?? DEFAULT_UNKNOWN_RUN_GRACE_MS,
      });
      await objects.remove(decision.remove.map((entry) => entry.key));
      if (decision.remove.length > 0) {
        const runDeleted = decision.remove.filter((entry) => entry.reason === 'RunDeleted').length;
        this.#options.logger.debug(
          {
            artifactStore: `${namespace}/${store.metadata.name ?? ''}`,
            runDeleted,
            supersededAttempt: decision.remove.length - runDeleted,
          },
          'removed artifact objects',
        );
      }
      // A second after the soonest retention end, so that the object is past it then.
      const nextMs = decision.nextExpiryMs === undefined ? this.#intervalMs : Math.min(this.#intervalMs, decision.nextExpiryMs + 1_000);
      return { outcome: { kind: 'cleaned', removed: decision.remove.length }, nextMs };
    } catch (error) {
      if (!isKruntimesError(error, 'ArtifactStoreUnavailable')) throw error;
      return { outcome: { kind: 'unavailable', reason: ARTIFACT_STORE_REASONS.storeUnreachable, message: error.message }, nextMs: retry };
    } finally {
      objects.destroy();
    }
  }

  #runsOf(namespace: string): Map<string, LiveRunAttempt> {
    const runs = new Map<string, LiveRunAttempt>();
    for (const run of this.#options.caches.runs.list(namespace)) {
      const uid = run.metadata.uid;
      if (uid !== undefined) {
        runs.set(uid, {
          attempt: run.status?.attempt,
          terminal: isTerminal(phaseOf(run)),
          checkpointAttempts: checkpointAttemptsNeeded(run.status),
        });
      }
    }
    return runs;
  }

  /** Refused (Conflict, NotFound): the next pass is due at once, decided from the version the watch brings. */
  async #writeStatus(key: string, store: ArtifactStore, status: ArtifactStoreStatus): Promise<void> {
    const written = await writeStatus(this.#options.artifactStores, store, status, this.#options.logger);
    if (!written.written && written.reason !== 'Unchanged') this.#due.delete(key);
  }
}
