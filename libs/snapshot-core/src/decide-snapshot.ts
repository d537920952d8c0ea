import { createHash } from 'node:crypto';
import {
  API_GROUP_VERSION,
  BOUNDS,
  CONDITION_TYPES,
  LABELS,
  PART_OF,
  RUN_KIND,
  RUN_REASONS,
  SOURCE_SNAPSHOT,
  snapshotConfigMapName,
  utf8ByteLength,
} from '@kruntimes/api';
import type { OwnerReference, Run, SourceSnapshot } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { classify, currentPhase, findCondition, isExecutedElsewhere } from '@kruntimes/run-state';
import type { SourceProblemReason } from '@kruntimes/run-state';

/** How often a Run whose source cannot be resolved yet is looked at again. */
export const SOURCE_POLL_MS = 5000;

/** sha256 of the UTF-8 text, as status.source records it. */
export function sourceDigest(text: string): { digest: string; size: number } {
  const bytes = Buffer.from(text, 'utf8');
  return { digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, size: bytes.length };
}

/**
 * Whether the snapshot controller has anything to do for this Run: a Pending Run without
 * status.source (a new Run, or one created before snapshots existed), that the scheduler
 * could bind. A cancelled one is ended by the scheduler; one executed elsewhere is never bound.
 */
export function needsSnapshot(run: ReadonlyDeep<Pick<Run, 'metadata' | 'spec' | 'status'>>): boolean {
  return (
    classify(currentPhase(run)) === 'queued' &&
    run.status?.source === undefined &&
    run.metadata.deletionTimestamp === undefined &&
    run.spec.cancelRequested !== true &&
    !isExecutedElsewhere(run.spec)
  );
}

/** What reading the source gave: the text, or why there is none. */
export type SourceRead =
  | { type: 'text'; text: string }
  | { type: 'notFound'; detail: string }
  | { type: 'forbidden'; detail: string }
  /** A ConfigMap of the snapshot's name that is not the snapshot (other bytes, or mutable). */
  | { type: 'conflict'; detail: string };

export type SourceDecision =
  /** Make (or reuse) the snapshot of `text`, then record `source`. */
  | { action: 'snapshot'; text: string; source: SourceSnapshot }
  /** Stay Pending with the reason; look again after `requeueAfterMs` (when the wait runs out at the latest). */
  | { action: 'wait'; reason: SourceProblemReason; message: string; requeueAfterMs: number }
  /** The wait is over: Failed with the reason. */
  | { action: 'fail'; reason: SourceProblemReason; message: string };

export interface SourceDecisionInput {
  run: Pick<Run, 'metadata' | 'spec' | 'status'>;
  /** The source as read: the inline text, or the ConfigMap key's. */
  read: SourceRead;
  nowMs: number;
  /** How long a Run may stay Pending with an unresolvable source (SOURCE_SNAPSHOT.maxWaitSeconds). */
  maxWaitMs: number;
}

/**
 * The snapshot of a Run's source, or why it cannot be made. A problem (missing, over the
 * source bound, not readable, not the pinned digest, a conflicting snapshot ConfigMap)
 * keeps the Run Pending until the wait that started when the condition SourceResolved
 * first became False runs out; then the Run fails with the same reason.
 */
export function decideSource(input: SourceDecisionInput): SourceDecision {
  const { run, read } = input;
  const problem = sourceProblem(run, read);
  if (problem === undefined && read.type === 'text') {
    const { digest, size } = sourceDigest(read.text);
    const configMapName = run.spec.source.configMapKeyRef === undefined ? undefined : snapshotConfigMapName(digest);
    return { action: 'snapshot', text: read.text, source: { digest, size, ...(configMapName === undefined ? {} : { configMapName }) } };
  }
  const { reason, message } = problem ?? { reason: RUN_REASONS.sourceNotFound, message: 'the source could not be read' };
  const condition = findCondition(run.status?.conditions, CONDITION_TYPES.sourceResolved);
  const sinceMs = condition?.status === 'False' ? Date.parse(condition.lastTransitionTime) : Number.NaN;
  const waitedMs = Number.isNaN(sinceMs) ? 0 : Math.max(0, input.nowMs - sinceMs);
  const waitSeconds = Math.round(input.maxWaitMs / 1000);
  if (waitedMs >= input.maxWaitMs) {
    return { action: 'fail', reason, message: `${message} (still after waiting ${String(waitSeconds)}s)` };
  }
  return {
    action: 'wait',
    reason,
    message: `${message}; the Run fails if this lasts ${String(waitSeconds)}s`,
    // Polled: nothing watches the user's ConfigMaps, and one created late should not wait out the whole bound.
    requeueAfterMs: Math.min(input.maxWaitMs - waitedMs, SOURCE_POLL_MS),
  };
}

function sourceProblem(
  run: ReadonlyDeep<Pick<Run, 'spec'>>,
  read: SourceRead,
): { reason: SourceProblemReason; message: string } | undefined {
  const where = describeSource(run);
  switch (read.type) {
    case 'notFound':
      return { reason: RUN_REASONS.sourceNotFound, message: `${where}: ${read.detail}` };
    case 'forbidden':
      return { reason: RUN_REASONS.sourceForbidden, message: `${where} is not readable by the platform: ${read.detail}` };
    case 'conflict':
      return { reason: RUN_REASONS.sourceSnapshotConflict, message: read.detail };
    case 'text': {
      const bytes = utf8ByteLength(read.text);
      if (bytes > BOUNDS.inlineSourceBytes) {
        return {
          reason: RUN_REASONS.sourceTooLarge,
          message: `${where} is ${String(bytes)} bytes, over the source bound of ${String(BOUNDS.inlineSourceBytes)}`,
        };
      }
      const pinned = run.spec.source.digest;
      const { digest } = sourceDigest(read.text);
      if (pinned !== undefined && pinned !== digest) {
        return { reason: RUN_REASONS.sourceDigestMismatch, message: `${where} is ${digest}, not the pinned spec.source.digest ${pinned}` };
      }
      return undefined;
    }
  }
}

/** `ConfigMap ns-less name key k` or `the inline source`, for messages. */
export function describeSource(run: ReadonlyDeep<Pick<Run, 'spec'>>): string {
  const ref = run.spec.source.configMapKeyRef;
  return ref === undefined ? 'the inline source' : `ConfigMap ${ref.name} key ${ref.key}`;
}

/** The parts of a ConfigMap the snapshot decision reads. */
export interface ConfigMapView {
  immutable?: boolean;
  data?: Readonly<Record<string, string>>;
  binaryData?: Readonly<Record<string, string>>;
  ownerReferences?: readonly Readonly<OwnerReference>[];
}

export type SnapshotConfigMapDecision =
  | { action: 'create' }
  /** The right content, not yet owned by this Run: add its owner reference (shared by digest). */
  | { action: 'adopt' }
  | { action: 'use' }
  | { action: 'conflict'; detail: string };

/**
 * What to do with the ConfigMap named by the digest: create it when absent; when present,
 * use it only if it is immutable and holds exactly these bytes (Runs with the same source
 * in one namespace share it, each an owner, so it goes when the last of them goes).
 */
export function decideSnapshotConfigMap(
  existing: ConfigMapView | undefined,
  name: string,
  text: string,
  runUID: string,
): SnapshotConfigMapDecision {
  if (existing === undefined) return { action: 'create' };
  const held = existing.data?.[SOURCE_SNAPSHOT.key];
  if (existing.immutable !== true) return { action: 'conflict', detail: `ConfigMap ${name} exists and is not immutable: not a snapshot` };
  if (held === undefined || Object.keys(existing.data ?? {}).length !== 1 || Object.keys(existing.binaryData ?? {}).length > 0) {
    return { action: 'conflict', detail: `ConfigMap ${name} exists but does not hold only the key ${SOURCE_SNAPSHOT.key}` };
  }
  if (held !== text) {
    return { action: 'conflict', detail: `ConfigMap ${name} exists with other content (${sourceDigest(held).digest})` };
  }
  return existing.ownerReferences?.some((owner) => owner.uid === runUID) === true ? { action: 'use' } : { action: 'adopt' };
}

/** The owner reference a snapshot ConfigMap carries for each Run that uses it. */
export function runOwnerReference(run: ReadonlyDeep<Pick<Run, 'metadata'>>): OwnerReference {
  return { apiVersion: API_GROUP_VERSION, kind: RUN_KIND, name: run.metadata.name ?? '', uid: run.metadata.uid ?? '' };
}

/** A ConfigMap as the API takes it (plain data). */
export interface SnapshotConfigMap {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences: OwnerReference[];
  };
  immutable: true;
  data: Record<string, string>;
}

/** The immutable snapshot ConfigMap of `text`, owned by the Run (garbage-collected with it). */
export function snapshotConfigMap(
  run: ReadonlyDeep<Pick<Run, 'metadata'>>,
  source: Pick<SourceSnapshot, 'digest'>,
  text: string,
): SnapshotConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: snapshotConfigMapName(source.digest),
      namespace: run.metadata.namespace ?? '',
      labels: { [LABELS.partOf]: PART_OF, [LABELS.component]: SNAPSHOT_COMPONENT },
      annotations: { [SOURCE_SNAPSHOT.digestAnnotation]: source.digest },
      ownerReferences: [runOwnerReference(run)],
    },
    immutable: true,
    data: { [SOURCE_SNAPSHOT.key]: text },
  };
}

/** `app.kubernetes.io/component` of snapshot ConfigMaps. */
export const SNAPSHOT_COMPONENT = 'source-snapshot';

/**
 * runtimed's check before it runs anything: the bytes it is about to run against the
 * snapshot recorded in status.source. A description of the difference, or undefined.
 */
export function snapshotMismatch(text: string, snapshot: Pick<SourceSnapshot, 'digest' | 'size'>): string | undefined {
  const actual = sourceDigest(text);
  if (actual.digest === snapshot.digest && actual.size === snapshot.size) return undefined;
  return `the source to run is ${actual.digest} (${String(actual.size)} bytes), not the snapshot ${snapshot.digest} (${String(snapshot.size)} bytes) recorded in status.source`;
}
