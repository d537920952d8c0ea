/** Checks of what a writer reports (snapshot, schema, checkpoint, endpoint, artifacts) against the API bounds, before the write instead of failing it. */
import { ARTIFACT_DIGEST_PATTERN, BOUNDS, utf8ByteLength } from '@kruntimes/api';
import type { ArtifactRecord, RunArtifacts, RunEndpoint, SourceSnapshot } from '@kruntimes/api';
import type { RefusalKind } from './rules.ts';

const ARTIFACT_DIGEST = new RegExp(ARTIFACT_DIGEST_PATTERN);

/** A snapshot's digest and size against the API bounds. */
export function sourceSnapshotProblem(source: SourceSnapshot): string | undefined {
  if (!ARTIFACT_DIGEST.test(source.digest)) return 'source digest is not sha256:<64 hex>';
  if (!Number.isSafeInteger(source.size) || source.size < 0 || source.size > BOUNDS.inlineSourceBytes) {
    return `source size ${String(source.size)} is not within 0..${String(BOUNDS.inlineSourceBytes)}`;
  }
  return undefined;
}

/** A reported value that may not be written, and why. */
export interface ReportProblem {
  kind: RefusalKind;
  detail: string;
}

/** The schema and checkpoint a WaitForInput records, against the API bounds. */
export function waitForInputProblem(schema: string, checkpoint: { digest: string; size: number }): ReportProblem | undefined {
  const schemaProblem = inputSchemaProblem(schema);
  if (schemaProblem !== undefined) return schemaProblem;
  if (!ARTIFACT_DIGEST.test(checkpoint.digest)) return { kind: 'bounds', detail: 'checkpoint digest is not sha256:<64 hex>' };
  if (!Number.isSafeInteger(checkpoint.size) || checkpoint.size < 0 || checkpoint.size > BOUNDS.checkpointBytes) {
    return { kind: 'bounds', detail: `checkpoint size ${String(checkpoint.size)} is not within 0..${String(BOUNDS.checkpointBytes)}` };
  }
  return undefined;
}

/** A JSON Schema is an object or a boolean, within its bound. */
function inputSchemaProblem(schema: string): ReportProblem | undefined {
  if (utf8ByteLength(schema) > BOUNDS.inputSchemaBytes) {
    return { kind: 'bounds', detail: `the input schema is over ${String(BOUNDS.inputSchemaBytes)} bytes` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(schema);
  } catch {
    return { kind: 'precondition', detail: 'the input schema is not JSON' };
  }
  const isSchema = typeof parsed === 'boolean' || (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed));
  return isSchema ? undefined : { kind: 'precondition', detail: 'the input schema is not a JSON Schema (an object or a boolean)' };
}

/** Endpoint bounds of the CRD, checked before the write instead of failing it. */
export function endpointBoundsProblem(endpoint: RunEndpoint): string | undefined {
  if (utf8ByteLength(endpoint.url) > BOUNDS.endpointUrlBytes) return `endpoint.url exceeds ${BOUNDS.endpointUrlBytes} bytes`;
  if (endpoint.caBundle !== undefined && Buffer.byteLength(endpoint.caBundle, 'base64') > BOUNDS.caBundleBytes) {
    return `endpoint.caBundle exceeds ${BOUNDS.caBundleBytes} bytes`;
  }
  return undefined;
}

/**
 * The artifacts a Succeeded report carries against what the spec declares: every
 * required output present, nothing undeclared, each within its declaration and bounds.
 * runtimed verified them in the store; this keeps any writer from recording less.
 */
export function artifactRecordsProblem(declared: RunArtifacts | undefined, records: readonly ArtifactRecord[]): ReportProblem | undefined {
  if (declared === undefined) {
    return records.length === 0 ? undefined : { kind: 'precondition', detail: 'the Run declares no artifacts (spec.artifacts)' };
  }
  if (records.length > BOUNDS.artifactCount) {
    return { kind: 'bounds', detail: `${String(records.length)} artifacts, at most ${String(BOUNDS.artifactCount)} allowed` };
  }
  const seen = new Set<string>();
  for (const record of records) {
    // Only declared ids that passed are in `seen`, so a repeat is reported as such.
    if (seen.has(record.id)) return { kind: 'precondition', detail: `artifact ${record.id} is listed twice` };
    const problem = artifactRecordProblem(declared.outputs, record);
    if (problem !== undefined) return problem;
    seen.add(record.id);
  }
  const missing = declared.outputs.filter((output) => output.optional !== true && !seen.has(output.id)).map((output) => output.id);
  if (missing.length > 0) return { kind: 'precondition', detail: `required artifacts missing: ${missing.join(', ')}` };
  return undefined;
}

/** One artifact record against its declaration. */
function artifactRecordProblem(outputs: RunArtifacts['outputs'], record: ArtifactRecord): ReportProblem | undefined {
  const declaration = outputs.find((output) => output.id === record.id);
  if (declaration === undefined) return { kind: 'precondition', detail: `artifact ${record.id} is not declared` };
  if (!ARTIFACT_DIGEST.test(record.digest)) return { kind: 'bounds', detail: `artifact ${record.id}: digest is not sha256:<64 hex>` };
  if (!Number.isSafeInteger(record.size) || record.size < 0 || record.size > declaration.maxBytes) {
    const detail = `artifact ${record.id}: size ${String(record.size)} is over its maxBytes ${String(declaration.maxBytes)}`;
    return { kind: 'bounds', detail };
  }
  if (record.mediaType !== declaration.mediaType) {
    const detail = `artifact ${record.id}: media type ${record.mediaType} is not the declared ${declaration.mediaType}`;
    return { kind: 'precondition', detail };
  }
  return undefined;
}
