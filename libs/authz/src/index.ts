export * from './access-reviewer.ts';
export * from './cache-policy.ts';
export * from './metrics.ts';
export { decisionOf, selfSubjectAccessReviewer } from './self-subject-access-review.ts';
export type { ReviewAnswer, ReviewDecision, Reviewer } from './self-subject-access-review.ts';
export * from './subject-access-review.ts';
