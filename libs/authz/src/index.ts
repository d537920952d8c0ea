// Cached access reviews: SubjectAccessReview for a caller, and the runtime "use" check; the caller's bearer token they review.
export { AccessReviewer } from './access-reviewer.ts';
export { bearerToken } from './bearer-token.ts';
export { RuntimeUseReviewer, subjectAccessReview } from './subject-access-review.ts';
export { NO_AUTHZ_METRICS } from './metrics.ts';
export type { AuthzMetrics } from './metrics.ts';
