import { createHash } from 'node:crypto';
import { API_GROUP_VERSION, LABELS, RUN_SCHEDULE_KIND, SCHEDULE_ANNOTATIONS, SCHEDULE_BOUNDS } from '@kruntimes/api';
import type { Run, RunSchedule } from '@kruntimes/api';

const SCHEDULED_HASH_CHARS = 10;
const MANUAL_PREFIX = 'm-';
const MANUAL_HASH_CHARS = 8;

/** Where a Run of a schedule comes from: a scheduled UTC instant, or a manual trigger with its own key. */
export type RunOrigin = { scheduledAt: number } | { triggerId: string };

/**
 * The name of the Run for one scheduled instant: `<schedule>-<10 hex of sha256(schedule, instant)>`,
 * at most 63 characters. The same pair always gives the same name, so a create that meets
 * AlreadyExists is the duplicate check, whichever replica or retry got there first.
 */
export function scheduledRunName(schedule: string, scheduledAt: number): string {
  return `${stem(schedule)}-${hash(`scheduled\n${schedule}\n${rfc3339(scheduledAt)}`, SCHEDULED_HASH_CHARS)}`;
}

/** The name of a manual Run: `<schedule>-m-<8 hex of sha256(schedule, trigger ID)>`; a retried trigger is the same Run. */
export function manualRunName(schedule: string, triggerId: string): string {
  return `${stem(schedule)}-${MANUAL_PREFIX}${hash(`manual\n${schedule}\n${triggerId}`, MANUAL_HASH_CHARS)}`;
}

export function runName(schedule: string, origin: RunOrigin): string {
  return 'scheduledAt' in origin ? scheduledRunName(schedule, origin.scheduledAt) : manualRunName(schedule, origin.triggerId);
}

/** Why a trigger ID is refused (1-128 bytes of visible ASCII, like an invocation ID), or undefined. */
export function triggerIdProblem(id: string): string | undefined {
  return /^[\x21-\x7e]+$/.test(id) && id.length <= SCHEDULE_BOUNDS.triggerIdBytes
    ? undefined
    : `trigger ID must be 1-${SCHEDULE_BOUNDS.triggerIdBytes} bytes of visible ASCII`;
}

/** The schedule's name, cut so that the suffix fits in a DNS label (the CRD already bounds it; this keeps the function total). */
function stem(schedule: string): string {
  return schedule.slice(0, SCHEDULE_BOUNDS.nameBytes).replace(/[-.]+$/, '');
}

function hash(text: string, chars: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, chars);
}

/**
 * The Run a schedule creates: its template's spec, labels and annotations, the schedule
 * label, the scheduled instant (or trigger ID) as an annotation, and a controller owner
 * reference to the schedule, so that deleting the schedule garbage-collects its Runs.
 */
export function scheduledRun(schedule: RunSchedule, origin: RunOrigin): Run {
  const name = schedule.metadata.name ?? '';
  const template = structuredClone(schedule.spec.runTemplate);
  const annotations: Record<string, string> = {
    ...template.metadata?.annotations,
    ...('scheduledAt' in origin
      ? { [SCHEDULE_ANNOTATIONS.scheduledAt]: rfc3339(origin.scheduledAt) }
      : { [SCHEDULE_ANNOTATIONS.triggerId]: origin.triggerId }),
  };
  return {
    apiVersion: API_GROUP_VERSION,
    kind: 'Run',
    metadata: {
      name: runName(name, origin),
      ...(schedule.metadata.namespace === undefined ? {} : { namespace: schedule.metadata.namespace }),
      labels: { ...template.metadata?.labels, [LABELS.schedule]: name },
      annotations,
      ownerReferences: [
        {
          apiVersion: API_GROUP_VERSION,
          kind: RUN_SCHEDULE_KIND,
          name,
          uid: schedule.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: template.spec,
  };
}

/** The scheduled instant a Run of a schedule was created for, from its annotation; undefined for a manual Run. */
export function scheduledAtOf(annotations: Readonly<Record<string, string>> | undefined): number | undefined {
  const text = annotations?.[SCHEDULE_ANNOTATIONS.scheduledAt];
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

/** RFC 3339 in UTC with whole seconds, as Kubernetes writes timestamps. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
