import type { Run } from '@kruntimes/api';
import { checkOwnership } from '@kruntimes/fencing';

/** The ownership epoch a write is fenced on ("Fencing" in docs/lifecycle.md). */
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
  const ownership = checkOwnership(run.status, epoch.podUID, epoch.attempt);
  if (ownership.owner) return undefined;
  switch (ownership.reason) {
    case 'unassigned':
    case 'otherPod':
      return `assigned to Pod ${run.status?.assignedPodUID ?? '(none)'}`;
    case 'otherAttempt':
      return `now at attempt ${run.status?.attempt ?? 0}`;
  }
}
