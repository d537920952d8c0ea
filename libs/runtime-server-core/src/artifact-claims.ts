import { BOUNDS, isArtifactId, isSha256Hex } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';

/** One declared output of the execution's Run (spec.artifacts.outputs), as runtimed sent it. */
export interface DeclaredOutput {
  readonly id: string;
  readonly maxBytes: number;
  readonly mediaType: string;
  readonly optional: boolean;
}

/** What user code says about one artifact: to ask for a grant, or to record it in the manifest. */
export interface ArtifactClaim {
  readonly artifactId: string;
  readonly size: number;
  /** Lowercase hex. */
  readonly sha256: string;
  readonly mediaType: string;
}

const FIELDS = new Set(['artifactId', 'size', 'sha256', 'mediaType']);

/**
 * Checks a request body of the local artifacts endpoint against the declaration and
 * returns the claim with its media type filled in. Throws InvalidRequest (malformed),
 * ArtifactNotDeclared (unknown ID or another media type) or ArtifactTooLarge.
 */
export function parseArtifactClaim(body: unknown, declared: readonly DeclaredOutput[]): ArtifactClaim {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new KruntimesError('InvalidRequest', 'the body must be a JSON object {artifactId, size, sha256, mediaType?}');
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !FIELDS.has(key));
  if (unknown.length > 0) throw new KruntimesError('InvalidRequest', `unknown fields: ${unknown.slice(0, 4).join(', ')}`);
  const { artifactId, size, sha256, mediaType } = fields;
  if (typeof artifactId !== 'string' || !isArtifactId(artifactId)) {
    throw new KruntimesError('InvalidRequest', 'artifactId must be an artifact ID (lowercase letters, digits, ".", "_", "-")');
  }
  const output = declared.find((d) => d.id === artifactId);
  if (output === undefined) {
    const names = declared.map((d) => d.id).join(', ');
    throw new KruntimesError('ArtifactNotDeclared', `artifact ${artifactId} is not declared (declared: ${names === '' ? 'none' : names})`);
  }
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new KruntimesError('InvalidRequest', 'size must be an integer number of bytes, at least 0');
  }
  if (size > output.maxBytes) {
    throw new KruntimesError('ArtifactTooLarge', `artifact ${artifactId} is ${size} bytes, its maxBytes is ${output.maxBytes}`);
  }
  if (typeof sha256 !== 'string' || !isSha256Hex(sha256)) {
    throw new KruntimesError('InvalidRequest', 'sha256 must be 64 lowercase hex digits');
  }
  if (mediaType !== undefined && typeof mediaType !== 'string') throw new KruntimesError('InvalidRequest', 'mediaType must be a string');
  if (mediaType !== undefined && mediaType !== output.mediaType) {
    throw new KruntimesError(
      'ArtifactNotDeclared',
      `artifact ${artifactId} is declared as ${output.mediaType}, not ${mediaType.slice(0, 300)}`,
    );
  }
  return { artifactId, size, sha256, mediaType: output.mediaType };
}

/** Problems of the declaration runtimed sent with an ExecuteRequest (empty: fine). */
export function declarationProblems(declared: readonly DeclaredOutput[]): string[] {
  const problems: string[] = [];
  if (declared.length === 0) problems.push('artifacts.declared is empty');
  if (declared.length > BOUNDS.artifactCount) problems.push(`at most ${BOUNDS.artifactCount} declared artifacts`);
  const seen = new Set<string>();
  for (const output of declared) {
    if (!isArtifactId(output.id)) problems.push(`artifact ID ${JSON.stringify(output.id.slice(0, 80))} is invalid`);
    if (seen.has(output.id)) problems.push(`artifact ${output.id} is declared twice`);
    seen.add(output.id);
    if (!Number.isSafeInteger(output.maxBytes) || output.maxBytes < 0) problems.push(`artifact ${output.id}: maxBytes is invalid`);
    if (output.mediaType === '') problems.push(`artifact ${output.id}: mediaType is empty`);
  }
  return problems;
}

/**
 * The ResultManifest of one execution: one entry per artifact ID, the last record wins,
 * at most `limit` entries (the declared count). Entries come out in recording order.
 */
export class ResultManifest {
  readonly #limit: number;
  readonly #entries = new Map<string, ArtifactClaim>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  record(claim: ArtifactClaim): void {
    if (!this.#entries.has(claim.artifactId) && this.#entries.size >= this.#limit) {
      throw new KruntimesError('InvalidRequest', `the manifest already holds ${this.#limit} artifacts`);
    }
    // Delete first so that a re-recorded artifact moves to the end, as it was recorded last.
    this.#entries.delete(claim.artifactId);
    this.#entries.set(claim.artifactId, claim);
  }

  entries(): ArtifactClaim[] {
    return [...this.#entries.values()];
  }
}
