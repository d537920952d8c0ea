import type { KubeConfig } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { API_GROUP, DEFAULTS, RUN_PLURAL } from '@kruntimes/api';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import { cacheKey, decisionTtlMs } from './cache-policy.ts';
import type { AccessRequest, DecisionTtls } from './cache-policy.ts';
import { NO_AUTHZ_METRICS } from './metrics.ts';
import type { AuthzMetrics } from './metrics.ts';
import { selfSubjectAccessReviewer } from './self-subject-access-review.ts';
import type { ReviewAnswer, ReviewDecision, Reviewer } from './self-subject-access-review.ts';

export interface AccessReviewerOptions {
  /** Only its current cluster (server, CA) is used, never its user. */
  kubeConfig: KubeConfig;
  /** Bound of the decision cache (LRU). */
  maxEntries?: number;
  /** Upper bound on how long any decision is remembered (allowed ones: exactly this); 0 turns the cache off. */
  maxTtlMs?: number;
  /** Upper bound on how long a denied or unauthenticated decision is remembered. */
  maxDeniedTtlMs?: number;
  /** Clock, milliseconds since the epoch (compared with the JWT `exp`). */
  now?: () => number;
  metrics?: AuthzMetrics;
  /** Deadline of one SelfSubjectAccessReview. */
  reviewTimeoutMs?: number;
  /** Replaces the SelfSubjectAccessReview call (unit tests of the cache). */
  review?: Reviewer;
}

export const DEFAULT_MAX_ENTRIES = 10_000;
export const DEFAULT_MAX_TTL_MS = DEFAULTS.authzCacheTtlSeconds * 1000;
export const DEFAULT_MAX_DENIED_TTL_MS = DEFAULTS.authzDenialCacheTtlSeconds * 1000;

interface CachedDecision {
  decision: ReviewDecision;
  expiresAtMs: number;
}

/**
 * Authorizes callers of the dataplane ("Request" in docs/invoke-contract.md): may the owner of this bearer
 * token `get` runs.kruntimes.io N in namespace NS? Asked through a SelfSubjectAccessReview
 * made with the caller's own token; the answer is cached per token hash and Run, never
 * past the token's expiry: allowed at most maxTtlMs, denied and unauthenticated at most
 * maxDeniedTtlMs, a denial with an evaluation error not at all (decisionTtlMs).
 * Concurrent misses for the same key share one review. When no answer could be had the
 * failure is thrown and not cached: `AuthorizationUnavailable` when the API server could
 * not be asked (down, restarting, overloaded: retry), `Internal` when what it answered is
 * not a review.
 */
export class AccessReviewer {
  readonly #cache: LRUCache<string, CachedDecision>;
  readonly #inFlight = new Map<string, Promise<ReviewDecision>>();
  readonly #ttls: DecisionTtls;
  readonly #now: () => number;
  readonly #metrics: AuthzMetrics;
  readonly #review: Reviewer;

  constructor(options: AccessReviewerOptions) {
    const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, not ${maxEntries}`);
    this.#cache = new LRUCache({ max: maxEntries });
    this.#ttls = { maxTtlMs: options.maxTtlMs ?? DEFAULT_MAX_TTL_MS, maxDeniedTtlMs: options.maxDeniedTtlMs ?? DEFAULT_MAX_DENIED_TTL_MS };
    this.#now = options.now ?? Date.now;
    this.#metrics = options.metrics ?? NO_AUTHZ_METRICS;
    this.#review =
      options.review ??
      selfSubjectAccessReviewer(options.kubeConfig, options.reviewTimeoutMs === undefined ? {} : { timeoutMs: options.reviewTimeoutMs });
  }

  /** Resolves when allowed; throws KruntimesError Unauthenticated, Forbidden, AuthorizationUnavailable or Internal. */
  async authorize(request: AccessRequest): Promise<void> {
    // A header value Node would refuse to send, or none at all: no review can accept it.
    if (!/^[\x21-\x7e]+$/.test(request.token)) throw new KruntimesError('Unauthenticated', 'no usable bearer token', { terminal: true });
    const key = cacheKey(request);
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.expiresAtMs > this.#now()) {
      this.#metrics.cacheRequest('hit');
      enforce(cached.decision, request);
      return;
    }
    if (cached !== undefined) this.#cache.delete(key);
    this.#metrics.cacheRequest('miss');
    let pending = this.#inFlight.get(key);
    if (pending === undefined) {
      // `.finally` runs after `set`, even when the review fails synchronously.
      pending = this.#reviewAndRemember(key, request).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    enforce(await pending, request);
  }

  /** Entries currently cached (expired ones included until looked up or evicted). */
  get size(): number {
    return this.#cache.size;
  }

  async #reviewAndRemember(key: string, request: AccessRequest): Promise<ReviewDecision> {
    let answer: ReviewAnswer;
    try {
      answer = await this.#review(request);
    } catch (error) {
      this.#metrics.review('error');
      if (isKruntimesError(error)) throw error;
      throw new KruntimesError('Internal', 'authz: SelfSubjectAccessReview failed', { cause: error });
    }
    this.#metrics.review(answer.decision);
    const now = this.#now();
    const ttlMs = decisionTtlMs(answer, request.token, now, this.#ttls);
    if (ttlMs > 0) this.#cache.set(key, { decision: answer.decision, expiresAtMs: now + ttlMs });
    return answer.decision;
  }
}

function enforce(decision: ReviewDecision, request: AccessRequest): void {
  switch (decision) {
    case 'allowed':
      return;
    case 'denied':
      throw new KruntimesError('Forbidden', `the caller may not get ${RUN_PLURAL}.${API_GROUP} ${request.namespace}/${request.name}`, {
        terminal: true,
      });
    case 'unauthenticated':
      throw new KruntimesError('Unauthenticated', 'the API server rejected the bearer token', { terminal: true });
  }
}
