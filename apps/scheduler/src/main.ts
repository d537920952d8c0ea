// scheduler: wiring only. Its flags' meanings and defaults, and their checks:
// parseSchedulerFlags and schedulerConfig; what it runs: schedulerProcess (all in
// @kruntimes/scheduler-core).
import { loadKubeConfig } from '@kruntimes/controller-runtime';
import { parseSchedulerFlags, schedulerConfig, schedulerProcess } from '@kruntimes/scheduler-core';
import { pino } from 'pino';

const flags = parseSchedulerFlags(process.argv.slice(2));

const logger = pino({
  name: 'scheduler',
  level: flags['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

try {
  const config = schedulerConfig(flags, process.env);
  const kubeConfig = loadKubeConfig(config.kubeconfig);
  process.exit(await schedulerProcess({ config, kubeConfig, logger }).runUntilSignalled());
} catch (error) {
  logger.fatal({ err: error }, 'scheduler failed');
  process.exitCode = 1;
}
