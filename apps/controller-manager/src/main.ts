// controller-manager: wiring only. Its flags' meanings and defaults, and their checks:
// controllerManagerConfig; what it runs: controllerManagerProcess (both in
// @kruntimes/controller-manager-core, with @kruntimes/schedule-core for RunSchedules).
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '@kruntimes/controller-runtime';
import { controllerManagerConfig, controllerManagerProcess } from '@kruntimes/controller-manager-core';
import { pino } from 'pino';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    'lease-namespace': { type: 'string' },
    'lease-name': { type: 'string' },
    'lease-duration-seconds': { type: 'string' },
    'renew-deadline-seconds': { type: 'string' },
    'retry-period-seconds': { type: 'string' },
    'runtimed-image': { type: 'string' },
    'python-image': { type: 'string' },
    'bash-image': { type: 'string' },
    'runtime-service-account': { type: 'string' },
    'runtime-server-listen': { type: 'string' },
    'user-namespaces': { type: 'string' },
    'finished-runs-per-runtime': { type: 'string' },
    'internal-ca-dir': { type: 'string' },
    'log-level': { type: 'string' },
    'metrics-address': { type: 'string' },
    'health-address': { type: 'string' },
    'gateway-host': { type: 'string' },
    'gateway-ca-file': { type: 'string' },
    'runtime-otlp-endpoint': { type: 'string' },
    'runtimed-cpu-request': { type: 'string' },
    'runtimed-memory-request': { type: 'string' },
    'runtimed-memory-limit': { type: 'string' },
    'automatic-retry': { type: 'string' },
  },
  strict: true,
});

const logger = pino({
  name: 'controller-manager',
  level: values['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

try {
  // Before leader election: a configuration error is reported at once, not on taking the lease.
  const config = await controllerManagerConfig(values, process.env);
  const kubeConfig = loadKubeConfig(config.kubeconfig);
  process.exit(await controllerManagerProcess({ config, kubeConfig, logger }).runUntilSignalled());
} catch (error) {
  logger.fatal({ err: error }, 'controller-manager failed');
  process.exitCode = 1;
}
