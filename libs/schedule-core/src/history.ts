/** What pruning reads of a finished Run of a schedule. */
export interface FinishedScheduleRun {
  name: string;
  uid: string;
  resourceVersion: string;
  succeeded: boolean;
  /** status.completionTime, else the creation time (ms). */
  finishedAt: number;
}

export interface HistoryLimits {
  successfulRunsHistoryLimit: number;
  failedRunsHistoryLimit: number;
}

/**
 * The finished Runs of a schedule past its history limits: the newest N that succeeded and
 * the newest M that did not are kept (newest by finish time, then name, so replicas agree);
 * every older one is returned to delete. Active Runs are never passed in.
 */
export function runsToPrune(finished: readonly FinishedScheduleRun[], limits: HistoryLimits): FinishedScheduleRun[] {
  const newestFirst = [...finished].sort((a, b) => b.finishedAt - a.finishedAt || b.name.localeCompare(a.name));
  const succeeded = newestFirst.filter((run) => run.succeeded);
  const failed = newestFirst.filter((run) => !run.succeeded);
  return [...succeeded.slice(limits.successfulRunsHistoryLimit), ...failed.slice(limits.failedRunsHistoryLimit)];
}
