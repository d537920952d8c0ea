export { StaleRecovery } from './stale-recovery.ts';
export { parseStaleRecoveryFlags, staleRecoveryConfig } from './config.ts';
export type { StaleRecoveryConfig, StaleRecoveryFlags } from './config.ts';
export { staleRecoveryProcess } from './process.ts';
export type { StaleRecoveryProcessOptions } from './process.ts';
export { RecoveryMetrics } from './metrics.ts';
export { STALE_RECOVERY_LEASE_NAME, STALE_RECOVERY_RULES } from './rbac.ts';
/** What stale recovery's Run cache keeps of a Run (the scale bench measures it). */
export { RECOVERY_RUN_PROJECTION } from './recovery-caches.ts';
