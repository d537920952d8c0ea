import { RUN_REASONS } from '@kruntimes/api';

/**
 * Pure: the reason of an attempt interrupted because its execution was lost (no exit from
 * the Runtime Server), when it is more specific than a lost owner. The one rule for
 * runtimed and `krt run --local`: a Runtime Server known to have died during the
 * execution (killed, out of memory, crashed) took the task with it while its owner
 * (runtimed, krt) is still there: RuntimeServerLost. Undefined: the generic OwnerLost, as
 * for any loss whose cause is not known.
 */
export function decideLostExecutionReason(runtimeServerDied: boolean): typeof RUN_REASONS.runtimeServerLost | undefined {
  return runtimeServerDied ? RUN_REASONS.runtimeServerLost : undefined;
}
