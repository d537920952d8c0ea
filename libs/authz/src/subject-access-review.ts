import { ApiException, AuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { LRUCache } from 'lru-cache';
import { API_GROUP, RUNTIME_PLURAL, RUNTIME_USE_VERB } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { answerTtlMs } from './cache-policy.ts';
import type { DecisionTtls } from './cache-policy.ts';
import { DEFAULT_MAX_DENIED_TTL_MS, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_TTL_MS } from './access-reviewer.ts';
import type { ReviewAnswer } from './self-subject-access-review.ts';

/** May this user (as recorded on a Run) `use` this Runtime? */
export interface RuntimeUseRequest {
  username: string;
  groups: readonly string[];
  namespace: string;
  runtime: string;
}

/** The API server's answer, with its reason when it gave one (RBAC's denial text). */
export interface RuntimeUseAnswer extends ReviewAnswer {
  reason: string;
}

export type RuntimeUseReview = (request: RuntimeUseRequest) => Promise<RuntimeUseAnswer>;

/**
 * A SubjectAccessReview with the service's own identity (it needs `create` on
 * subjectaccessreviews): verb `use` on the Runtime, for the recorded user and groups.
 * Rejects with `AuthorizationUnavailable` when no answer could be had.
 */
export function subjectAccessReview(kubeConfig: KubeConfig): RuntimeUseReview {
  const api = kubeConfig.makeApiClient(AuthorizationV1Api);
  return async (request) => {
    let review;
    try {
      review = await api.createSubjectAccessReview({
        body: {
          spec: {
            user: request.username,
            groups: [...request.groups],
            resourceAttributes: {
              group: API_GROUP,
              resource: RUNTIME_PLURAL,
              verb: RUNTIME_USE_VERB,
              namespace: request.namespace,
              name: request.runtime,
            },
          },
        },
      });
    } catch (error) {
      const detail = error instanceof ApiException ? `HTTP ${error.code}` : error instanceof Error ? error.message : String(error);
      throw new KruntimesError('AuthorizationUnavailable', `authz: SubjectAccessReview failed: ${detail}`, { cause: error });
    }
    const status = review.status;
    if (status === undefined) throw new KruntimesError('Internal', 'authz: SubjectAccessReview answer has no status');
    const evaluationError = (status.evaluationError ?? '') !== '';
    return { decision: status.allowed ? 'allowed' : 'denied', evaluationError, reason: status.reason ?? '' };
  };
}

export interface RuntimeUseReviewerOptions {
  review: RuntimeUseReview;
  /** Bound of the decision cache (LRU). */
  maxEntries?: number;
  /** Upper bound on how long an allowed answer is remembered; 0 turns the cache off. */
  maxTtlMs?: number;
  /** Upper bound on how long a denied answer is remembered. */
  maxDeniedTtlMs?: number;
  now?: () => number;
}

interface Cached {
  answer: RuntimeUseAnswer;
  expiresAtMs: number;
}

/**
 * The scheduler's question at assignment, answered with the gateway's cache policy
 * (answerTtlMs: allowed 30 s, denied 5 s, a denial with an evaluation error never, by
 * default; bounded LRU; concurrent misses for one key share one review), so a Runtime's
 * Pending Runs of one creator cost one review per TTL, and a right revoked or granted
 * takes effect within the TTL. A failure is thrown and not cached.
 */
export class RuntimeUseReviewer {
  readonly #cache: LRUCache<string, Cached>;
  readonly #inFlight = new Map<string, Promise<RuntimeUseAnswer>>();
  readonly #ttls: DecisionTtls;
  readonly #now: () => number;
  readonly #review: RuntimeUseReview;
  /** Reviews sent to the API server (for tests and metrics). */
  reviews = 0;

  constructor(options: RuntimeUseReviewerOptions) {
    const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, not ${maxEntries}`);
    this.#cache = new LRUCache({ max: maxEntries });
    this.#ttls = { maxTtlMs: options.maxTtlMs ?? DEFAULT_MAX_TTL_MS, maxDeniedTtlMs: options.maxDeniedTtlMs ?? DEFAULT_MAX_DENIED_TTL_MS };
    this.#now = options.now ?? Date.now;
    this.#review = options.review;
  }

  async review(request: RuntimeUseRequest): Promise<RuntimeUseAnswer> {
    const key = runtimeUseKey(request);
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.expiresAtMs > this.#now()) return cached.answer;
    if (cached !== undefined) this.#cache.delete(key);
    let pending = this.#inFlight.get(key);
    if (pending === undefined) {
      pending = this.#reviewAndRemember(key, request).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  /** Entries currently cached (expired ones included until looked up or evicted). */
  get size(): number {
    return this.#cache.size;
  }

  async #reviewAndRemember(key: string, request: RuntimeUseRequest): Promise<RuntimeUseAnswer> {
    this.reviews += 1;
    const answer = await this.#review(request);
    const ttlMs = answerTtlMs(answer, this.#ttls);
    if (ttlMs > 0) this.#cache.set(key, { answer, expiresAtMs: this.#now() + ttlMs });
    return answer;
  }
}

/** The user, their groups (in any order) and the Runtime; JSON keeps the parts apart. */
export function runtimeUseKey(request: RuntimeUseRequest): string {
  return JSON.stringify([request.username, [...request.groups].sort(), request.namespace, request.runtime]);
}
