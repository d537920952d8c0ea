import {
  BOUNDS,
  OVERLAP_POLICIES,
  RUN_SCHEDULE_KIND,
  RUN_SCHEDULE_PLURAL,
  RUN_SCHEDULE_SHORT_NAMES,
  RUN_SCHEDULE_SINGULAR,
  SCHEDULE_BOUNDS,
  SCHEDULE_DEFAULTS,
  SCHEDULE_SHAPE_PATTERN,
  TIME_ZONE_PATTERN,
} from '@kruntimes/api';
import { conditionsSchema } from './conditions-schema.ts';
import { namespacedCrd } from './crd.ts';
import { runTemplateSpecSchema } from './run-crd.ts';
import { boolean, dateTime, int32, integer, object, string } from './schema.ts';
import type { CustomResourceDefinition, JsonSchema } from './schema.ts';

const stringMap = (description: string): JsonSchema => ({
  type: 'object',
  description,
  maxProperties: 64,
  additionalProperties: string('A value.', { maxLength: 4096 }),
});

const spec = object(
  'When to create Runs, and what they run.',
  {
    schedule: string(
      'Five cron fields (minute hour day-of-month month day-of-week) read in timeZone, or @hourly, @daily, @weekly, @monthly, @yearly.',
      {
        minLength: 1,
        maxLength: SCHEDULE_BOUNDS.scheduleBytes,
        'x-kubernetes-validations': [
          {
            rule: `self.matches('${SCHEDULE_SHAPE_PATTERN}')`,
            message:
              'schedule must be five cron fields (minute hour day-of-month month day-of-week), e.g. "30 2 * * *", or a macro such as @daily',
          },
        ],
      },
    ),
    timeZone: string('IANA time zone the schedule is read in, e.g. Europe/Berlin.', {
      minLength: 1,
      maxLength: SCHEDULE_BOUNDS.timeZoneBytes,
      default: SCHEDULE_DEFAULTS.timeZone,
      'x-kubernetes-validations': [
        {
          rule: `self.matches('${TIME_ZONE_PATTERN}')`,
          message: 'timeZone must be an IANA time zone name such as Europe/Berlin or UTC',
        },
        // CEL's timestamp accessors take a zone of the API server's zone database: an unknown name fails this rule.
        { rule: "timestamp('2000-01-01T00:00:00Z').getHours(self) >= 0", message: 'timeZone must be in the IANA time zone database' },
      ],
    }),
    overlapPolicy: string('While a Run of this schedule is active: Skip the scheduled time, or Queue it (at most one waits).', {
      enum: OVERLAP_POLICIES,
      default: SCHEDULE_DEFAULTS.overlapPolicy,
    }),
    runTemplate: object(
      'The Run created at each scheduled time.',
      {
        metadata: object('Labels and annotations copied onto each Run.', {
          labels: stringMap('Labels of each Run (kruntimes.io/schedule is always set to this schedule).'),
          annotations: stringMap('Annotations of each Run.'),
        }),
        spec: runTemplateSpecSchema(),
      },
      { required: ['spec'] },
    ),
    suspend: boolean('Create no Runs while true; missed times are then judged on resume like after downtime.', { default: false }),
    startingDeadlineSeconds: integer('A scheduled time not started within this many seconds of it is missed, not run late.', {
      minimum: 0,
    }),
    successfulRunsHistoryLimit: int32('Succeeded Runs kept.', {
      minimum: 0,
      maximum: SCHEDULE_BOUNDS.historyLimit,
      default: SCHEDULE_DEFAULTS.successfulRunsHistoryLimit,
    }),
    failedRunsHistoryLimit: int32('Runs kept that finished other than Succeeded.', {
      minimum: 0,
      maximum: SCHEDULE_BOUNDS.historyLimit,
      default: SCHEDULE_DEFAULTS.failedRunsHistoryLimit,
    }),
  },
  { required: ['schedule', 'runTemplate'] },
);

const status = object('Observed state, written only by the controller-manager.', {
  observedGeneration: integer('metadata.generation last acted on.', { minimum: 0 }),
  nextRunAt: dateTime('The next scheduled time (UTC).'),
  lastScheduledAt: dateTime('The newest scheduled time acted on: a Run created, queued or skipped for it.'),
  lastRunRef: object(
    'The Run created last.',
    {
      name: string('Run name.', { maxLength: BOUNDS.dnsLabelBytes }),
      uid: string('Run UID.', { maxLength: 36 }),
    },
    { required: ['name'] },
  ),
  active: int32('Runs of this schedule not finished.', { minimum: 0 }),
  queuedAt: dateTime('With overlapPolicy Queue: the scheduled time waiting for the active Run to finish.'),
  skipped: integer('Scheduled times skipped because a Run was active.', { minimum: 0 }),
  missed: integer('Scheduled times that passed with nothing to run them (downtime, suspend, starting deadline).', { minimum: 0 }),
  conditions: conditionsSchema,
});

export function runScheduleCrd(): CustomResourceDefinition {
  return namespacedCrd({
    kind: RUN_SCHEDULE_KIND,
    plural: RUN_SCHEDULE_PLURAL,
    singular: RUN_SCHEDULE_SINGULAR,
    shortNames: RUN_SCHEDULE_SHORT_NAMES,
    description: 'Creates Runs from a template on a cron schedule in an IANA time zone.',
    spec,
    status,
    // As `kubectl get cronjobs` shows them.
    printerColumns: [
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Timezone', type: 'string', jsonPath: '.spec.timeZone' },
      { name: 'Suspend', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Active', type: 'integer', jsonPath: '.status.active' },
      { name: 'Last Schedule', type: 'date', jsonPath: '.status.lastScheduledAt' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      { name: 'Next Run', type: 'string', jsonPath: '.status.nextRunAt', priority: 1 },
      { name: 'Overlap', type: 'string', jsonPath: '.spec.overlapPolicy', priority: 1 },
    ],
    validations: [
      {
        rule: `self.metadata.name.size() <= ${SCHEDULE_BOUNDS.nameBytes}`,
        message: `a RunSchedule name is at most ${SCHEDULE_BOUNDS.nameBytes} characters: its Run names add 11 and must stay within 63`,
      },
    ],
  });
}
