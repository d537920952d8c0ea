import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { AccessRequest, ReviewAnswer } from './review-types.ts';

export type { AccessRequest } from './review-types.ts';

/**
 * Cache key: SHA-256 of the token (the raw token is never stored) plus the Run's
 * namespace, name and UID. `/` cannot occur in a namespace, a name or a UID, so the
 * parts cannot run into each other.
 */
export function cacheKey(request: AccessRequest): string {
  const tokenHash = createHash('sha256').update(request.token).digest('hex');
  return `${tokenHash}/${request.namespace}/${request.name}/${request.uid}`;
}

/**
 * The token's `exp` in milliseconds since the epoch, or undefined when the token is not a
 * JWT or carries no numeric `exp`. Decoded, never verified: the API server verifies the
 * token; `exp` only shortens how long its answer is remembered.
 */
export function tokenExpiryMs(token: string): number | undefined {
  let exp: unknown;
  try {
    exp = decodeJwt(token).exp;
  } catch {
    // Opaque tokens (static tokens, webhook tokens) are valid; they just have no known expiry.
    return undefined;
  }
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

/** Upper bounds on how long an answer is remembered, by what it said. */
export interface DecisionTtls {
  /** Any answer; 0 turns caching off. */
  maxTtlMs: number;
  /** Denied and unauthenticated answers, within maxTtlMs. */
  maxDeniedTtlMs: number;
}

/**
 * How long `answer` for `token` may be cached from `nowMs`. Allowed: at most maxTtlMs.
 * Denied or unauthenticated: at most maxDeniedTtlMs, as the Kubernetes webhook authorizer
 * keeps unauthorized answers far shorter than authorized ones, so that a denial from an
 * API server whose RBAC is still loading is soon asked again. A denial the authorizer
 * reached with an evaluation error is not cached at all. Never past the token's expiry.
 * 0 means do not cache.
 */
export function decisionTtlMs(answer: ReviewAnswer, token: string, nowMs: number, ttls: DecisionTtls): number {
  const ceiling = answerTtlMs(answer, ttls);
  const expiry = tokenExpiryMs(token);
  if (expiry === undefined) return ceiling;
  return Math.max(0, Math.min(ceiling, expiry - nowMs));
}

/**
 * The same policy without a token (a review about another user, asked with the service's
 * own identity): allowed at most maxTtlMs, denied at most maxDeniedTtlMs, a denial with an
 * evaluation error not at all.
 */
export function answerTtlMs(answer: ReviewAnswer, ttls: DecisionTtls): number {
  if (answer.decision === 'denied' && answer.evaluationError) return 0;
  const bound = answer.decision === 'allowed' ? ttls.maxTtlMs : Math.min(ttls.maxTtlMs, ttls.maxDeniedTtlMs);
  return Math.max(0, bound);
}
