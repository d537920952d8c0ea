/** A cache lookup of AccessReviewer.authorize: answered from the cache, or not. */
export type CacheResult = 'hit' | 'miss';
/** What one SelfSubjectAccessReview sent to the API server came back with. */
export type ReviewOutcome = 'allowed' | 'denied' | 'unauthenticated' | 'error';

/**
 * Hooks AccessReviewer calls; the exporter lives in the service (runtimed) so that this lib
 * needs no metrics SDK. Prometheus names are in AUTHZ_METRIC_NAMES.
 */
export interface AuthzMetrics {
  /** One per authorize() call. A miss that joins a review already in flight is a miss too. */
  cacheRequest(result: CacheResult): void;
  /** One per SelfSubjectAccessReview sent. */
  review(outcome: ReviewOutcome): void;
}

export const AUTHZ_METRIC_NAMES = {
  /** Counter, label `result` = hit | miss. */
  cacheRequests: 'kruntimes_authz_cache_requests_total',
  /** Counter, label `outcome` = allowed | denied | unauthenticated | error. */
  reviews: 'kruntimes_authz_reviews_total',
} as const;

export const NO_AUTHZ_METRICS: AuthzMetrics = {
  cacheRequest: () => undefined,
  review: () => undefined,
};

/**
 * Plain counters implementing AuthzMetrics: read them in tests, or export them from an
 * observable counter callback (runtimed's OpenTelemetry meter) under AUTHZ_METRIC_NAMES.
 */
export class AuthzCounters implements AuthzMetrics {
  readonly cacheRequests: Record<CacheResult, number> = { hit: 0, miss: 0 };
  readonly reviews: Record<ReviewOutcome, number> = { allowed: 0, denied: 0, unauthenticated: 0, error: 0 };

  cacheRequest(result: CacheResult): void {
    this.cacheRequests[result] += 1;
  }

  review(outcome: ReviewOutcome): void {
    this.reviews[outcome] += 1;
  }

  /** All reviews sent, whatever their outcome. */
  get reviewsSent(): number {
    return this.reviews.allowed + this.reviews.denied + this.reviews.unauthenticated + this.reviews.error;
  }
}
