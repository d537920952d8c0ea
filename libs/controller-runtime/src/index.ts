export { Controller } from './controller.ts';
export type { ControllerLogger, ControllerOptions, ReconcileResult, Reconciler } from './controller.ts';
export { DEFAULT_BACKOFF, exponentialFailureRateLimiter } from './rate-limiter.ts';
export type { ExponentialBackoffOptions, RateLimiter } from './rate-limiter.ts';
export { WorkQueue } from './work-queue.ts';
