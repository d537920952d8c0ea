// The types both the review and the cache policy speak, here so that neither imports the other.

/** The one resource a caller must be allowed to read before invoking a Run. */
export interface AccessRequest {
  token: string;
  namespace: string;
  name: string;
  uid: string;
}

/** What the API server decided about one caller and one Run. */
export type ReviewDecision = 'allowed' | 'denied' | 'unauthenticated';

/** One review's answer: the decision, and whether the authorizer said it hit errors reaching it. */
export interface ReviewAnswer {
  decision: ReviewDecision;
  /**
   * `status.evaluationError` was set: RBAC could not resolve some binding (say, a Role its
   * informer has not listed yet), so a denial may rest on partial data.
   */
  evaluationError: boolean;
}

/**
 * Asks the API server whether the caller may `get` the Run. Resolves with its answer;
 * rejects with a KruntimesError when none could be had: `AuthorizationUnavailable` when
 * the API server could not be asked (unreachable, timed out, 5xx, 429, or it refused the
 * review itself), `Internal` when what came back is not a review.
 */
export type Reviewer = (request: AccessRequest) => Promise<ReviewAnswer>;
