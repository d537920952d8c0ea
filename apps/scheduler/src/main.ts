// scheduler: wiring only. Its flags' meanings and defaults, and their checks:
// parseSchedulerFlags and schedulerConfig; what it runs: schedulerProcess (all in
// @kruntimes/scheduler-core).
import { runServiceMain } from '@kruntimes/controller-runtime';
import { parseSchedulerFlags, schedulerConfig, schedulerProcess } from '@kruntimes/scheduler-core';
import { pino } from 'pino';

await runServiceMain({
  name: 'scheduler',
  parseFlags: parseSchedulerFlags,
  config: schedulerConfig,
  logger: (level) => pino({ name: 'scheduler', level, redact: ['*.authorization', '*.token'] }),
  process: schedulerProcess,
});
