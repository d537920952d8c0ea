import { LABELS, SCHEDULE_ANNOTATIONS, SCHEDULE_BOUNDS } from '@kruntimes/api';
import type { RunSchedule } from '@kruntimes/api';
import { manualRunName, rfc3339, scheduledAtOf, scheduledRun, scheduledRunName, triggerIdProblem } from './run-naming.ts';

const at = (iso: string): number => Date.parse(iso);

const schedule: RunSchedule = {
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'RunSchedule',
  metadata: { name: 'nightly', namespace: 'team-a', uid: 'uid-1' },
  spec: {
    schedule: '0 2 * * *',
    runTemplate: {
      metadata: { labels: { team: 'a' }, annotations: { note: 'x' } },
      spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
    },
  },
};

describe('Run names', () => {
  it('are derived from the schedule and the UTC instant, whatever the milliseconds', () => {
    const name = scheduledRunName('nightly', at('2026-06-01T02:00:00Z'));
    expect(name).toMatch(/^nightly-[0-9a-f]{10}$/);
    expect(scheduledRunName('nightly', at('2026-06-01T02:00:00.999Z'))).toBe(name);
    expect(scheduledRunName('nightly', at('2026-06-01T02:01:00Z'))).not.toBe(name);
    expect(scheduledRunName('weekly', at('2026-06-01T02:00:00Z'))).not.toBe(name);
  });

  it('keep manual Runs apart by trigger ID, and a retried trigger the same', () => {
    expect(manualRunName('nightly', 'deploy-42')).toMatch(/^nightly-m-[0-9a-f]{8}$/);
    expect(manualRunName('nightly', 'deploy-42')).toBe(manualRunName('nightly', 'deploy-42'));
    expect(manualRunName('nightly', 'deploy-43')).not.toBe(manualRunName('nightly', 'deploy-42'));
  });

  it.each([
    ['the longest schedule name', 'a'.repeat(SCHEDULE_BOUNDS.nameBytes)],
    ['a longer one (cut, still a DNS label)', 'b'.repeat(70)],
    ['one whose cut ends in a dash', `${'c'.repeat(SCHEDULE_BOUNDS.nameBytes - 1)}-d`],
  ])('stay DNS labels of at most 63 characters: %s', (_what, name) => {
    for (const runName of [scheduledRunName(name, at('2026-06-01T02:00:00Z')), manualRunName(name, 'x')]) {
      expect(runName.length).toBeLessThanOrEqual(63);
      expect(runName).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    }
  });
});

describe('scheduledRun', () => {
  it('carries the template, the schedule label, the instant and an owner reference', () => {
    const run = scheduledRun(schedule, { scheduledAt: at('2026-06-01T02:00:00.500Z') });
    expect(run.metadata).toEqual({
      name: scheduledRunName('nightly', at('2026-06-01T02:00:00Z')),
      namespace: 'team-a',
      labels: { team: 'a', [LABELS.schedule]: 'nightly' },
      annotations: { note: 'x', [SCHEDULE_ANNOTATIONS.scheduledAt]: '2026-06-01T02:00:00Z' },
      ownerReferences: [
        {
          apiVersion: 'kruntimes.io/v1alpha1',
          kind: 'RunSchedule',
          name: 'nightly',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(run.spec).toEqual(schedule.spec.runTemplate.spec);
    expect(scheduledAtOf(run.metadata.annotations)).toBe(at('2026-06-01T02:00:00Z'));
  });

  it('marks a manual Run with its trigger ID and no instant', () => {
    const run = scheduledRun(schedule, { triggerId: 'deploy-42' });
    expect(run.metadata.name).toBe(manualRunName('nightly', 'deploy-42'));
    expect(run.metadata.annotations?.[SCHEDULE_ANNOTATIONS.triggerId]).toBe('deploy-42');
    expect(scheduledAtOf(run.metadata.annotations)).toBeUndefined();
  });

  it('does not share objects with the schedule (an informer cache object)', () => {
    const run = scheduledRun(schedule, { triggerId: 'x' });
    run.spec.source.inline = 'changed';
    expect(schedule.spec.runTemplate.spec.source.inline).toBe('print(1)');
  });
});

describe('small parts', () => {
  it.each([
    ['deploy-42', undefined],
    ['', 'trigger ID must be 1-128 bytes of visible ASCII'],
    ['has space', 'trigger ID must be 1-128 bytes of visible ASCII'],
    ['x'.repeat(129), 'trigger ID must be 1-128 bytes of visible ASCII'],
  ])('trigger ID %j', (id, problem) => {
    expect(triggerIdProblem(id)).toBe(problem);
  });

  it('reads a broken annotation as no instant', () => {
    expect(scheduledAtOf({ [SCHEDULE_ANNOTATIONS.scheduledAt]: 'yesterday' })).toBeUndefined();
    expect(scheduledAtOf(undefined)).toBeUndefined();
  });

  it('writes RFC 3339 with whole seconds', () => {
    expect(rfc3339(at('2026-06-01T02:00:00.999Z'))).toBe('2026-06-01T02:00:00Z');
  });
});
