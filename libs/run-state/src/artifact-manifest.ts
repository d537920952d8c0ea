import { BOUNDS, RUN_REASONS, isSha256Hex } from '@kruntimes/api';
import type { DeclaredArtifact } from '@kruntimes/api';

/** One ResultManifest entry as the Runtime Server reports it (ExecutionExited.manifest). */
export interface ManifestEntryInput {
  artifactId: string;
  /** Lowercase hex. */
  sha256: string;
  size: number;
  /** Empty: the declared one. */
  mediaType: string;
}

export type ArtifactFailureReason = typeof RUN_REASONS.artifactMissing | typeof RUN_REASONS.artifactInvalid;

export interface ArtifactProblem {
  reason: ArtifactFailureReason;
  message: string;
}

/** A manifest entry that passed checkManifest: to be found in the store as it says. */
export interface ExpectedArtifact {
  id: string;
  sha256Hex: string;
  size: number;
  mediaType: string;
  maxBytes: number;
}

/**
 * The ResultManifest against the declaration, before the store is asked anything:
 * entries that are undeclared, repeated, over their maxBytes, of another media type or
 * with a malformed digest make the manifest invalid (ArtifactInvalid); a required output
 * it does not name is missing (ArtifactMissing). Problems are in manifest order, the
 * missing ones last. The entries to verify are returned only when there is no problem.
 */
export function checkManifest(
  declared: readonly DeclaredArtifact[],
  manifest: readonly ManifestEntryInput[],
): { problems: ArtifactProblem[]; expected: ExpectedArtifact[] } {
  const problems: ArtifactProblem[] = [];
  const invalid = (message: string): void => {
    problems.push({ reason: RUN_REASONS.artifactInvalid, message });
  };
  if (manifest.length > BOUNDS.artifactCount) {
    invalid(`the manifest lists ${manifest.length} artifacts, at most ${BOUNDS.artifactCount} are allowed`);
    return { problems, expected: [] };
  }
  const expected: ExpectedArtifact[] = [];
  const seen = new Set<string>();
  for (const entry of manifest) {
    const id = entry.artifactId;
    const declaration = declared.find((output) => output.id === id);
    if (declaration === undefined) {
      invalid(`${JSON.stringify(id)} is in the manifest but not declared in spec.artifacts.outputs`);
      continue;
    }
    if (seen.has(id)) {
      invalid(`${id} is in the manifest twice`);
      continue;
    }
    seen.add(id);
    const mediaType = entry.mediaType === '' ? declaration.mediaType : entry.mediaType;
    if (mediaType !== declaration.mediaType) {
      invalid(`${id}: the manifest says media type ${entry.mediaType}, the declaration ${declaration.mediaType}`);
    } else if (!isSha256Hex(entry.sha256)) {
      invalid(`${id}: the manifest's sha256 is not 64 lowercase hex digits`);
    } else if (!Number.isSafeInteger(entry.size) || entry.size < 0) {
      invalid(`${id}: the manifest's size ${String(entry.size)} is not a byte count`);
    } else if (entry.size > declaration.maxBytes) {
      invalid(`${id}: ${entry.size} bytes is over its maxBytes ${declaration.maxBytes}`);
    } else {
      expected.push({ id, sha256Hex: entry.sha256, size: entry.size, mediaType, maxBytes: declaration.maxBytes });
    }
  }
  for (const output of declared) {
    if (output.optional !== true && !seen.has(output.id)) {
      problems.push({ reason: RUN_REASONS.artifactMissing, message: `${output.id} is declared (required) but not in the manifest` });
    }
  }
  return { problems, expected: problems.length === 0 ? expected : [] };
}

/** One Failed reason and message for a list of problems: the first one's reason, every message (bounded by the caller's status write). */
export function summarizeProblems(problems: readonly ArtifactProblem[]): ArtifactProblem | undefined {
  const [first] = problems;
  if (first === undefined) return undefined;
  return { reason: first.reason, message: problems.map((problem) => problem.message).join('; ') };
}
