import type { RunScheduleStatus } from '@kruntimes/api';
import type { ScheduleDecision } from './decide-schedule.ts';
import { scheduleStatus } from './schedule-status.ts';
import type { ScheduleStatusInput } from './schedule-status.ts';

const at = (iso: string): number => Date.parse(iso);
const decision: ScheduleDecision = {
  missed: 0,
  lastScheduledAt: at('2026-06-01T10:05:00Z'),
  queuedAt: undefined,
  nextRunAt: at('2026-06-01T10:10:00Z'),
  requeueAfterMs: 300_000,
};
const input: ScheduleStatusInput = {
  previous: undefined,
  generation: 2,
  suspend: false,
  decision,
  problem: undefined,
  active: 1,
  created: { name: 'nightly-abc', uid: 'u1' },
  now: at('2026-06-01T10:05:01Z'),
};

describe('scheduleStatus', () => {
  it('records the instants, the Run created and a True Scheduling condition', () => {
    expect(scheduleStatus(input)).toEqual({
      observedGeneration: 2,
      nextRunAt: '2026-06-01T10:10:00Z',
      lastScheduledAt: '2026-06-01T10:05:00Z',
      lastRunRef: { name: 'nightly-abc', uid: 'u1' },
      active: 1,
      skipped: 0,
      missed: 0,
      conditions: [
        {
          type: 'Scheduling',
          status: 'True',
          reason: 'Active',
          message: 'Runs are created at the scheduled times',
          lastTransitionTime: '2026-06-01T10:05:01Z',
          observedGeneration: 2,
        },
      ],
    } satisfies RunScheduleStatus);
  });

  it.each([
    ['suspended', { suspend: true }, 'False', 'Suspended'],
    [
      'a problem wins over suspend',
      { suspend: true, problem: { reason: 'InvalidTimeZone' as const, message: 'x' } },
      'False',
      'InvalidTimeZone',
    ],
  ])('%s', (_what, changes: Partial<ScheduleStatusInput>, status, reason) => {
    const condition = scheduleStatus({ ...input, ...changes }).conditions?.[0];
    expect({ status: condition?.status, reason: condition?.reason }).toEqual({ status, reason });
  });

  it('grows the counters by what this decision skipped and missed, and keeps the last Run when none was created', () => {
    const previous = scheduleStatus(input);
    const next = scheduleStatus({
      ...input,
      previous,
      created: undefined,
      decision: { ...decision, skip: at('2026-06-01T10:10:00Z'), missed: 3, queuedAt: at('2026-06-01T10:10:00Z') },
      now: at('2026-06-01T10:20:00Z'),
    });
    expect(next).toMatchObject({ skipped: 1, missed: 3, lastRunRef: { name: 'nightly-abc', uid: 'u1' }, queuedAt: '2026-06-01T10:10:00Z' });
    // The condition did not flip: its transition time stays.
    expect(next.conditions?.[0]?.lastTransitionTime).toBe('2026-06-01T10:05:01Z');
  });
});
