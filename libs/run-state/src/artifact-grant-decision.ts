import { DEFAULTS, isSha256Hex } from '@kruntimes/api';
import type { DeclaredArtifact } from '@kruntimes/api';
import type { ErrorCode } from '@kruntimes/errors';

/** Lowercase hex SHA-256, as the grant request and the manifest carry it. */

/** One upload asked for by an execution (GrantUploadRequest without the token). */
export interface GrantRequest {
  artifactId: string;
  size: number;
  sha256: string;
  /** Empty: the declared one. */
  mediaType: string;
}

export interface GrantInput {
  request: GrantRequest;
  /**
   * What the token and a fresh read of the Run say about the asking attempt: `unknown`
   * (no execution holds this token), `stale` (the Run moved on: another attempt, another
   * Pod, ended, cancel requested) or `current` with the Run's declared outputs.
   */
  attempt: { type: 'unknown' } | { type: 'stale'; why: string } | { type: 'current'; declared: readonly DeclaredArtifact[] };
  nowMs: number;
  /** When the Pod Lease expires as this process last renewed it; undefined: never renewed. */
  leaseExpiresAtMs: number | undefined;
  /** Upper bound of a grant's lifetime; default DEFAULTS.artifactGrantSeconds. */
  maxGrantSeconds?: number;
}

export type GrantDecision =
  | { type: 'grant'; artifactId: string; size: number; sha256Hex: string; mediaType: string; expiresInSeconds: number }
  | { type: 'refuse'; code: ErrorCode; message: string };

/**
 * Whether runtimed presigns one upload, and for how long. A grant is for the attempt
 * that is current now, for a declared artifact with its declared media type, within its
 * maxBytes, and expires no later than the Pod Lease: past the Lease, stale-recovery may
 * fence this Pod and another attempt may start, which must not find this one's uploads
 * still possible. A Lease already past (or never renewed) refuses with OwnerUnavailable:
 * this process cannot vouch for its ownership, though the attempt may still be its own.
 */
export function decideGrant(input: GrantInput): GrantDecision {
  const { request, attempt } = input;
  if (attempt.type === 'unknown') return refuse('StaleAttempt', 'no running execution holds this grant token');
  if (attempt.type === 'stale') return refuse('StaleAttempt', `the attempt is no longer current: ${attempt.why}`);
  const declaration = attempt.declared.find((output) => output.id === request.artifactId);
  if (declaration === undefined) {
    return refuse('ArtifactNotDeclared', `artifact ${JSON.stringify(request.artifactId)} is not declared in spec.artifacts.outputs`);
  }
  const mediaType = request.mediaType === '' ? declaration.mediaType : request.mediaType;
  if (mediaType !== declaration.mediaType) {
    return refuse(
      'ArtifactNotDeclared',
      `artifact ${declaration.id} is declared as ${declaration.mediaType}, not ${JSON.stringify(request.mediaType)}`,
    );
  }
  if (!Number.isSafeInteger(request.size) || request.size < 0) {
    return refuse('InvalidRequest', `size ${String(request.size)} is not a byte count`);
  }
  if (request.size > declaration.maxBytes) {
    return refuse('ArtifactTooLarge', `artifact ${declaration.id}: ${request.size} bytes is over its maxBytes ${declaration.maxBytes}`);
  }
  if (!isSha256Hex(request.sha256)) return refuse('InvalidRequest', 'sha256 is not 64 lowercase hex digits');
  const lifetime = grantLifetime(input);
  if (lifetime.type === 'refuse') return lifetime;
  return {
    type: 'grant',
    artifactId: declaration.id,
    size: request.size,
    sha256Hex: request.sha256,
    mediaType,
    expiresInSeconds: lifetime.seconds,
  };
}

/**
 * How long a grant may live: its upper bound, and never past the Pod Lease (past it,
 * another attempt may start elsewhere). Shared by upload and checkpoint grants.
 */
export function grantLifetime(
  input: Pick<GrantInput, 'nowMs' | 'leaseExpiresAtMs' | 'maxGrantSeconds'>,
): { type: 'lifetime'; seconds: number } | { type: 'refuse'; code: ErrorCode; message: string } {
  if (input.leaseExpiresAtMs === undefined) {
    return refuse('OwnerUnavailable', 'the Pod Lease was never renewed: this runtimed cannot vouch for its attempt');
  }
  const leaseSeconds = Math.floor((input.leaseExpiresAtMs - input.nowMs) / 1000);
  if (leaseSeconds < 1) return refuse('OwnerUnavailable', 'the Pod Lease expired: this runtimed cannot vouch for its attempt');
  return { type: 'lifetime', seconds: Math.min(input.maxGrantSeconds ?? DEFAULTS.artifactGrantSeconds, leaseSeconds) };
}

function refuse(code: ErrorCode, message: string): { type: 'refuse'; code: ErrorCode; message: string } {
  return { type: 'refuse', code, message };
}
