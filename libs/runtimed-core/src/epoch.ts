import type { Run } from '@kruntimes/api';

/** The ownership epoch a write is fenced on (ARCHITECTURE §5). */
export interface Epoch {
  namespace: string;
  name: string;
  uid: string;
  attempt: number;
  podUID: string;
}

/** Why the live object is not this epoch, or undefined when it is. */
export function epochMismatch(run: Pick<Run, 'metadata' | 'status'>, epoch: Epoch): string | undefined {
  if (run.metadata.uid !== epoch.uid) return `the name now holds Run ${run.metadata.uid ?? '?'}`;
  if (run.status?.assignedPodUID !== epoch.podUID) return `assigned to Pod ${run.status?.assignedPodUID ?? '(none)'}`;
  if (run.status.attempt !== epoch.attempt) return `now at attempt ${run.status.attempt ?? 0}`;
  return undefined;
}
