import { RUN_REASONS, artifactObjectKey, artifactRunPrefix } from '@kruntimes/api';
import type { ArtifactRecord, DeclaredArtifact } from '@kruntimes/api';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import { checkManifest, summarizeProblems } from '@kruntimes/run-state';
import type { ArtifactProblem, ExpectedArtifact, ManifestEntryInput } from '@kruntimes/run-state';
import type { ResolvedStore, StoreResolver } from './artifact-store.ts';
import { DEFAULT_STORE_RETRY_DELAYS_MS, StoreUnreadableError, readStoreRetrying } from './store-retry.ts';

/**
 * Waits between passes over the store when it could not be read: four passes over about
 * 20 s, well within a Pod Lease (90 s by default), after which the attempt counts as
 * interrupted (the code may have done its work; the platform could not confirm it).
 */

/** The attempt whose artifacts are checked. */
export interface ArtifactAttempt {
  namespace: string;
  uid: string;
  attempt: number;
  store: string;
  outputs: readonly DeclaredArtifact[];
}

export type VerificationOutcome =
  { type: 'verified'; records: ArtifactRecord[] } | { type: 'failed'; reason: ArtifactProblem['reason']; message: string };

export interface ArtifactVerificationOptions {
  stores: StoreResolver;
  retryDelaysMs?: readonly number[];
}

/**
 * The check at exit 0 of a task that declares artifacts: the ResultManifest against the
 * declaration, then every named object in the store (exists, size, and the SHA-256
 * runtimed computes by streaming it). A missing or mismatched object is a result of the
 * code (the same code gives the same result): `failed`, never retried. A store that
 * cannot be read after the bounded retries throws ArtifactStoreUnavailable.
 */
export class ArtifactVerification {
  readonly #stores: StoreResolver;
  readonly #delays: readonly number[];

  constructor(options: ArtifactVerificationOptions) {
    this.#stores = options.stores;
    this.#delays = options.retryDelaysMs ?? DEFAULT_STORE_RETRY_DELAYS_MS;
  }

  async verify(target: ArtifactAttempt, manifest: readonly ManifestEntryInput[], log: Logger): Promise<VerificationOutcome> {
    const checked = checkManifest(target.outputs, manifest);
    const manifestProblem = summarizeProblems(checked.problems);
    if (manifestProblem !== undefined) return { type: 'failed', ...manifestProblem };
    // Nothing named (every output optional): nothing to look for in the store.
    if (checked.expected.length === 0) return { type: 'verified', records: [] };
    const read = async (): Promise<VerificationOutcome> => {
      const store = await this.#stores(target.namespace, target.store);
      const problem = summarizeProblems(await inStore(store, target, checked.expected));
      if (problem !== undefined) return { type: 'failed', ...problem };
      return {
        type: 'verified',
        records: checked.expected.map(({ id, sha256Hex, size, mediaType }) => ({ id, digest: `sha256:${sha256Hex}`, size, mediaType })),
      };
    };
    try {
      return await readStoreRetrying(read, { delaysMs: this.#delays, log, what: 'verifying' });
    } catch (error) {
      if (!(error instanceof StoreUnreadableError)) throw error;
      throw new KruntimesError(
        'ArtifactStoreUnavailable',
        `could not verify the artifacts in store ${target.store} after ${error.message}`,
        {
          cause: error.cause,
        },
      );
    }
  }

  /**
   * After success: removes every object under the Run's prefix except the ones this
   * attempt's manifest names (other attempts' uploads, and this attempt's unnamed ones).
   * Best effort: a failure is logged, the Run stays Succeeded, and the retention of the
   * store removes what is left when the Run is deleted.
   */
  async removeOthers(target: ArtifactAttempt, kept: readonly ArtifactRecord[], log: Logger): Promise<void> {
    try {
      const store = await this.#stores(target.namespace, target.store);
      const keep = new Set(kept.map((record) => artifactObjectKey(store.prefix, target.namespace, target.uid, target.attempt, record.id)));
      const stale: string[] = [];
      for await (const { key } of store.objects.list(artifactRunPrefix(store.prefix, target.namespace, target.uid))) {
        if (!keep.has(key)) stale.push(key);
      }
      if (stale.length > 0) await store.objects.remove(stale);
      log.info({ removed: stale.length, kept: keep.size }, 'objects of other attempts and unnamed objects removed');
    } catch (error) {
      log.warn({ err: error }, 'removing the objects the manifest does not name failed; they stay until the retention removes them');
    }
  }
}

/** Every expected object against the store; errors reading it propagate (the pass is retried). */
async function inStore(store: ResolvedStore, target: ArtifactAttempt, expected: readonly ExpectedArtifact[]): Promise<ArtifactProblem[]> {
  const problems: ArtifactProblem[] = [];
  for (const artifact of expected) {
    const key = artifactObjectKey(store.prefix, target.namespace, target.uid, target.attempt, artifact.id);
    const problem = await checkStoredObject(store, key, artifact);
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/**
 * One object against what its uploader said: it exists (HEAD), has that size, and the
 * SHA-256 runtimed computes by streaming at most that many bytes matches. Undefined when
 * it does; errors reading the store propagate. Used for artifacts at exit 0 and for the
 * checkpoint that AwaitInput records.
 */
export async function checkStoredObject(
  store: ResolvedStore,
  key: string,
  artifact: Pick<ExpectedArtifact, 'id' | 'size' | 'sha256Hex'>,
  /** Who said what the object should be, in messages. */
  claimedBy = 'the manifest',
): Promise<ArtifactProblem | undefined> {
  const stat = await store.objects.stat(key);
  if (stat === undefined) {
    return { reason: RUN_REASONS.artifactMissing, message: `${artifact.id} is in ${claimedBy} but not in the store` };
  }
  if (stat.size !== artifact.size) {
    return {
      reason: RUN_REASONS.artifactInvalid,
      message: `${artifact.id}: ${claimedBy} says ${artifact.size} bytes, the store holds ${stat.size}`,
    };
  }
  const found = await hashAtMost(store, key, artifact.size);
  if (found === 'larger') {
    return {
      reason: RUN_REASONS.artifactInvalid,
      message: `${artifact.id}: ${claimedBy} says ${artifact.size} bytes, the stored object is larger`,
    };
  }
  if (found === undefined) {
    return { reason: RUN_REASONS.artifactMissing, message: `${artifact.id} is in ${claimedBy} but not in the store` };
  }
  if (found.size !== artifact.size || found.sha256Hex !== artifact.sha256Hex) {
    return {
      reason: RUN_REASONS.artifactInvalid,
      message: `${artifact.id}: ${claimedBy} says sha256 ${artifact.sha256Hex} (${artifact.size} bytes), the stored object has ${found.sha256Hex} (${found.size} bytes)`,
    };
  }
  return undefined;
}

/** The object's digest, or `larger` when it holds more than the manifest says (it changed since its HEAD). */
async function hashAtMost(
  store: ResolvedStore,
  key: string,
  size: number,
): Promise<{ sha256Hex: string; size: number } | 'larger' | undefined> {
  try {
    return await store.objects.sha256(key, size);
  } catch (error) {
    if (isKruntimesError(error) && error.code === 'ArtifactTooLarge') return 'larger';
    throw error;
  }
}
