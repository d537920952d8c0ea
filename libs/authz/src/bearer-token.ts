import { KruntimesError } from '@kruntimes/errors';

/**
 * `Bearer <b64token>` (RFC 6750 section 2.1); the scheme in any case, as RFC 7235 section 2.1
 * makes auth-schemes case-insensitive.
 */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The caller's token from an `Authorization` value: the gateway's HTTP header and runtimed's
 * gRPC metadata alike. Missing or not a bearer token: Unauthenticated, with a message that
 * never echoes the value (it may be a credential of another scheme).
 */
export function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization === '')
    throw new KruntimesError('Unauthenticated', 'a bearer token is required (Authorization: Bearer <token>)');
  const match = BEARER.exec(authorization);
  if (match?.[1] === undefined) throw new KruntimesError('Unauthenticated', 'the Authorization header is not a bearer token');
  return match[1];
}
