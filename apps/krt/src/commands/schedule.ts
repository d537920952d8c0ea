import { randomUUID } from 'node:crypto';
import { SCHEDULE_ANNOTATIONS } from '@kruntimes/api';
import type { RunSchedule } from '@kruntimes/api';
import { scheduledRun } from '@kruntimes/schedule-core';
import { stringify } from 'yaml';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { age } from '../output.ts';
import { ScheduleApi } from '../schedule-api.ts';
import type { CommandContext } from './context.ts';

type ScheduleCommand = Extract<Command, { name: 'schedule' }>;

export async function scheduleCommand(ctx: CommandContext, command: ScheduleCommand): Promise<ExitCode> {
  const schedules = new ScheduleApi(ctx.kubeConfig, ctx.runs.namespace);
  switch (command.action) {
    case 'get': {
      const items = command.schedule === undefined ? await schedules.list() : [await schedules.get(command.schedule)];
      if (items.length === 0 && command.output === 'table') {
        ctx.io.stderr.write(`No RunSchedules in namespace ${schedules.namespace}.\n`);
        return EXIT.ok;
      }
      ctx.io.stdout.write(formatSchedules(items, command.output, ctx.now()));
      return EXIT.ok;
    }
    case 'suspend':
    case 'resume': {
      await schedules.patchSpec(command.schedule, { suspend: command.action === 'suspend' });
      ctx.io.stdout.write(`runschedule/${command.schedule} ${command.action === 'suspend' ? 'suspended' : 'resumed'}\n`);
      return EXIT.ok;
    }
    case 'trigger':
      return trigger(ctx, await schedules.get(command.schedule), command.triggerId ?? randomUUID());
  }
}

/**
 * A manual Run of the schedule, named from the schedule and the trigger ID: the same ID
 * again is the same Run (AlreadyExists), so a retried trigger never runs twice.
 */
async function trigger(ctx: CommandContext, schedule: RunSchedule, triggerId: string): Promise<ExitCode> {
  const run = scheduledRun(schedule, { triggerId });
  const name = run.metadata.name ?? '';
  const created = await ctx.runs.tryCreate(run);
  if (!created.ok) {
    const existing = await ctx.runs.get(name);
    if (existing.metadata.annotations?.[SCHEDULE_ANNOTATIONS.triggerId] !== triggerId)
      throw new CliError(
        EXIT.usage,
        `Run "${name}" exists and is not the trigger "${triggerId}" of runschedule/${schedule.metadata.name ?? ''}`,
      );
    ctx.io.stdout.write(`run/${name}\n`);
    ctx.io.stderr.write(`run/${name} was already triggered with ID ${triggerId}; not created again\n`);
    return EXIT.ok;
  }
  ctx.io.stdout.write(`run/${name}\n`);
  ctx.io.stderr.write(`created run/${name}, a manual Run of runschedule/${schedule.metadata.name ?? ''} (trigger ID ${triggerId})\n`);
  return EXIT.ok;
}

/** RunSchedules as `krt schedule get` prints them: the columns of kubectl get cronjobs, and the next time. */
export function formatSchedules(items: readonly RunSchedule[], format: 'table' | 'json' | 'yaml', nowMs: number): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(items.length === 1 ? items[0] : { apiVersion: 'v1', kind: 'List', items }, null, 2)}\n`;
    case 'yaml':
      return stringify(items.length === 1 ? items[0] : { apiVersion: 'v1', kind: 'List', items });
    case 'table': {
      const header = ['NAME', 'SCHEDULE', 'TIMEZONE', 'SUSPEND', 'ACTIVE', 'LAST SCHEDULE', 'NEXT RUN', 'AGE'];
      const rows = items.map((s) => [
        s.metadata.name ?? '',
        s.spec.schedule,
        s.spec.timeZone ?? 'UTC',
        String(s.spec.suspend === true),
        String(s.status?.active ?? 0),
        s.status?.lastScheduledAt === undefined ? '<none>' : age(s.status.lastScheduledAt, nowMs),
        s.status?.nextRunAt ?? '<none>',
        age(s.metadata.creationTimestamp, nowMs),
      ]);
      const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)));
      return (
        [header, ...rows]
          .map((row) =>
            row
              .map((cell, i) => cell.padEnd(widths[i] ?? 0))
              .join('   ')
              .trimEnd(),
          )
          .join('\n') + '\n'
      );
    }
  }
}
