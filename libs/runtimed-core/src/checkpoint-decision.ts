import { BOUNDS, CHECKPOINT_CAPABILITY, CHECKPOINT_MEDIA_TYPE, isSha256Hex } from '@kruntimes/api';
import type { RunModeKind, RuntimeCapability } from '@kruntimes/api';
import type { ErrorCode } from '@kruntimes/errors';
import { compileInputSchema } from '@kruntimes/input-core';
import { grantLifetime } from '@kruntimes/run-state';
import type { GrantInput } from '@kruntimes/run-state';

/** What the token and a fresh read of the Run say about the attempt that asks to wait. */
export type WaitingAttempt =
  | { type: 'unknown' }
  | { type: 'stale'; why: string }
  /** Current and owned here: the live Run's mode and spec.artifacts store (undefined: none declared). */
  | { type: 'current'; mode: RunModeKind; store: string | undefined };

/** The checkpoint an execution stores (GrantCheckpoint) or stored (AwaitInput). */
export interface CheckpointFacts {
  attempt: WaitingAttempt;
  size: number;
  sha256: string;
  /** This runtimed's Runtime's spec.capabilities (from its Pod template). */
  capabilities: readonly RuntimeCapability[];
  runtime: string;
}

interface Refusal {
  type: 'refuse';
  code: ErrorCode;
  message: string;
}

export type CheckpointGrantDecision =
  { type: 'grant'; store: string; size: number; sha256Hex: string; mediaType: string; expiresInSeconds: number } | Refusal;

export type AwaitInputDecision =
  /** Verify the object in the store, then record the wait. */
  { type: 'verify'; store: string; size: number; sha256Hex: string; schema: string } | Refusal;

/**
 * Whether runtimed presigns the PUT of the attempt's checkpoint object: as an upload
 * grant (the current attempt only, never past the Pod Lease), for a task Run that can
 * wait, within BOUNDS.checkpointBytes.
 */
export function decideCheckpointGrant(
  facts: CheckpointFacts & Pick<GrantInput, 'nowMs' | 'leaseExpiresAtMs' | 'maxGrantSeconds'>,
): CheckpointGrantDecision {
  const checked = checkCheckpoint(facts);
  if (checked.type === 'refuse') return checked;
  const lifetime = grantLifetime(facts);
  if (lifetime.type === 'refuse') return lifetime;
  const { store, size, sha256Hex } = checked;
  return { type: 'grant', store, size, sha256Hex, mediaType: CHECKPOINT_MEDIA_TYPE, expiresInSeconds: lifetime.seconds };
}

/**
 * Whether AwaitInput goes on to the store: the same checks as the grant (the attempt
 * may have moved on since), and a schema that compiles. No Lease bound: the write that
 * follows is fenced on the epoch and the Run's resourceVersion.
 */
export function decideAwaitInput(facts: CheckpointFacts & { schemaJson: string }): AwaitInputDecision {
  const checked = checkCheckpoint(facts);
  if (checked.type === 'refuse') return checked;
  const schema = compileInputSchema(facts.schemaJson);
  if (!schema.ok) return refuse('InputSchemaInvalid', schema.problem);
  const { store, size, sha256Hex } = checked;
  return { type: 'verify', store, size, sha256Hex, schema: facts.schemaJson };
}

/**
 * Why this Run cannot wait for input here, naming everything that is missing, or
 * undefined when it can: a task (a function has no attempt to end and continue), with
 * spec.artifacts (the checkpoint is stored in its ArtifactStore), on a Runtime that
 * declares checkpoint-v1 (its Runtime Server knows how to hand a checkpoint back).
 */
export function checkpointUnsupported(
  run: { mode: RunModeKind; store: string | undefined },
  capabilities: readonly RuntimeCapability[],
  runtime: string,
): string | undefined {
  const missing: string[] = [];
  if (run.mode !== 'task') missing.push('the Run is a function Run, not a task');
  if (run.store === undefined) missing.push('the Run declares no spec.artifacts (its ArtifactStore keeps the checkpoint)');
  if (!capabilities.includes(CHECKPOINT_CAPABILITY)) {
    missing.push(`Runtime ${runtime} does not declare ${CHECKPOINT_CAPABILITY} in spec.capabilities`);
  }
  return missing.length === 0 ? undefined : `waiting for input is not available: ${missing.join('; ')}`;
}

function checkCheckpoint(facts: CheckpointFacts): { type: 'ok'; store: string; size: number; sha256Hex: string } | Refusal {
  const { attempt } = facts;
  if (attempt.type === 'unknown') return refuse('StaleAttempt', 'no running execution holds this grant token');
  if (attempt.type === 'stale') return refuse('StaleAttempt', `the attempt is no longer current: ${attempt.why}`);
  const unsupported = checkpointUnsupported(attempt, facts.capabilities, facts.runtime);
  if (unsupported !== undefined || attempt.store === undefined) return refuse('CheckpointUnsupported', unsupported ?? '');
  if (!Number.isSafeInteger(facts.size) || facts.size < 0) {
    return refuse('InvalidRequest', `size ${String(facts.size)} is not a byte count`);
  }
  if (facts.size > BOUNDS.checkpointBytes) {
    return refuse('CheckpointTooLarge', `the checkpoint is ${String(facts.size)} bytes, over ${String(BOUNDS.checkpointBytes)}`);
  }
  if (!isSha256Hex(facts.sha256)) return refuse('InvalidRequest', 'sha256 is not 64 lowercase hex digits');
  return { type: 'ok', store: attempt.store, size: facts.size, sha256Hex: facts.sha256 };
}

function refuse(code: ErrorCode, message: string): Refusal {
  return { type: 'refuse', code, message };
}
