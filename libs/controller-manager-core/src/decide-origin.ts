import type { Run } from '@kruntimes/api';
import { currentPhase, isExecutedElsewhere, transition } from '@kruntimes/run-state';
import type { TransitionResult } from '@kruntimes/run-state';

/** What the origin controller does with one Run. */
export type OriginDecision =
  | { action: 'ignore'; why: string }
  /** Write this status (RecordOrigin: Pending -> the recorded terminal phase). */
  | { action: 'record'; status: NonNullable<TransitionResult & { ok: true }>['status'] }
  /** The state machine refused the record: nothing to write; the Run stays Pending and says nothing new. */
  | { action: 'refused'; message: string };

/**
 * The origin controller's decision for a Run (pure): a Run with spec.origin still
 * Pending gets the recorded result through the state machine's RecordOrigin; anything
 * else is left alone (recorded already, executed by the platform, being deleted).
 */
export function decideOrigin(run: Pick<Run, 'metadata' | 'spec' | 'status'>, now: string): OriginDecision {
  if (!isExecutedElsewhere(run.spec)) return { action: 'ignore', why: 'executed by the platform (no spec.origin)' };
  if (run.metadata.deletionTimestamp !== undefined) return { action: 'ignore', why: 'being deleted' };
  const phase = currentPhase(run);
  if (phase !== 'Pending') return { action: 'ignore', why: `already ${phase}` };
  const result = transition({ run, event: { type: 'RecordOrigin' }, writer: 'controller-manager', now });
  return result.ok ? { action: 'record', status: result.status } : { action: 'refused', message: result.error.message };
}
