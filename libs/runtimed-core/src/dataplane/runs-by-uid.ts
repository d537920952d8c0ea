import type { Run } from '@kruntimes/api';
import { informerIndex } from '@kruntimes/controller-runtime';
import type { ReadonlyDeep, SharedInformer } from '@kruntimes/controller-runtime';

/**
 * The Run cache filed by UID, kept by the informer's own events: a deleted and re-created
 * Run of the same name is filed under its new UID only, so the old UID answers nothing.
 */
export const RUNS_BY_UID = informerIndex<Run>('runtimed-run-uid', (run) => (run.metadata.uid === undefined ? [] : [run.metadata.uid]));

/** A look-up of the current cached Run with a UID; files `runs` by UID (once, however often it is called). */
export function runByUidLookup(runs: SharedInformer<Run>): (uid: string) => ReadonlyDeep<Run> | undefined {
  runs.addIndex(RUNS_BY_UID);
  return (uid) => runs.byIndex(RUNS_BY_UID, uid)[0];
}
