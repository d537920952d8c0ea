// controller-manager: wiring only. Flags: CONTROLLER_MANAGER_FLAGS in
// libs/controller-manager-core/src/config.ts; the controllers it runs while leading:
// controllerManagerProcess (@kruntimes/controller-manager-core, with @kruntimes/schedule-core).
import { loadKubeConfig } from '@kruntimes/controller-runtime';
import { controllerManagerConfig, controllerManagerProcess, parseControllerManagerFlags } from '@kruntimes/controller-manager-core';
import { pino } from 'pino';

const flags = parseControllerManagerFlags(process.argv.slice(2));

const logger = pino({
  name: 'controller-manager',
  level: flags['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

try {
  // Before leader election: a configuration error is reported at once, not on taking the lease.
  const config = await controllerManagerConfig(flags, process.env);
  const kubeConfig = loadKubeConfig(config.kubeconfig);
  process.exit(await controllerManagerProcess({ config, kubeConfig, logger }).runUntilSignalled());
} catch (error) {
  logger.fatal({ err: error }, 'controller-manager failed');
  process.exitCode = 1;
}
