// stale-recovery: wiring only. Its flags' meanings and defaults, and their checks:
// parseStaleRecoveryFlags and staleRecoveryConfig; what it runs: staleRecoveryProcess (all in
// @kruntimes/stale-recovery-core).
import { loadKubeConfig } from '@kruntimes/controller-runtime';
import { parseStaleRecoveryFlags, staleRecoveryConfig, staleRecoveryProcess } from '@kruntimes/stale-recovery-core';
import { pino } from 'pino';

const flags = parseStaleRecoveryFlags(process.argv.slice(2));

const logger = pino({
  name: 'stale-recovery',
  level: flags['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

try {
  const config = staleRecoveryConfig(flags, process.env);
  const kubeConfig = loadKubeConfig(config.kubeconfig);
  process.exit(await staleRecoveryProcess({ config, kubeConfig, logger }).runUntilSignalled());
} catch (error) {
  logger.fatal({ err: error }, 'stale-recovery failed');
  process.exitCode = 1;
}
