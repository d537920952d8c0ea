// controller-manager: wiring only. Its flags' meanings and defaults, and their checks:
// parseControllerManagerFlags and controllerManagerConfig; what it runs: controllerManagerProcess
// (all in @kruntimes/controller-manager-core, with @kruntimes/schedule-core for RunSchedules).
import { runServiceMain } from '@kruntimes/controller-runtime';
import { controllerManagerConfig, controllerManagerProcess, parseControllerManagerFlags } from '@kruntimes/controller-manager-core';
import { pino } from 'pino';

await runServiceMain({
  name: 'controller-manager',
  parseFlags: parseControllerManagerFlags,
  config: controllerManagerConfig,
  logger: (level) => pino({ name: 'controller-manager', level, redact: ['*.authorization', '*.token'] }),
  process: controllerManagerProcess,
});
