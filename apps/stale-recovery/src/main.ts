// stale-recovery: wiring only. Its flags' meanings and defaults, and their checks:
// parseStaleRecoveryFlags and staleRecoveryConfig; what it runs: staleRecoveryProcess (all in
// @kruntimes/stale-recovery-core).
import { runServiceMain } from '@kruntimes/controller-runtime';
import { parseStaleRecoveryFlags, staleRecoveryConfig, staleRecoveryProcess } from '@kruntimes/stale-recovery-core';
import { pino } from 'pino';

await runServiceMain({
  name: 'stale-recovery',
  parseFlags: parseStaleRecoveryFlags,
  config: staleRecoveryConfig,
  logger: (level) => pino({ name: 'stale-recovery', level, redact: ['*.authorization', '*.token'] }),
  process: staleRecoveryProcess,
});
