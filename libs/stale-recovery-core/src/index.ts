export { StaleRecovery } from './stale-recovery.ts';
export { RecoveryMetrics } from './metrics.ts';
export { STALE_RECOVERY_LEASE_NAME, STALE_RECOVERY_RULES } from './rbac.ts';
