import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';

/** The one resource a caller must be allowed to read before invoking a Run. */
export interface AccessRequest {
  token: string;
  namespace: string;
  name: string;
  uid: string;
}

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

/**
 * How long a decision for `token` may be cached from `nowMs`: at most `maxTtlMs`, never
 * past the token's expiry. 0 means do not cache (the token has expired, or caching is off).
 */
export function decisionTtlMs(token: string, nowMs: number, maxTtlMs: number): number {
  const ceiling = Math.max(0, maxTtlMs);
  const expiry = tokenExpiryMs(token);
  if (expiry === undefined) return ceiling;
  return Math.max(0, Math.min(ceiling, expiry - nowMs));
}
