export * from './decide.ts';
export * from './evidence.ts';
export * from './lease-report.ts';
export * from './metrics.ts';
export * from './rbac.ts';
export * from './reporting-tracker.ts';
export * from './stale-recovery.ts';
export { epochKey, runFacts, runKeyOfEvent } from './run-facts.ts';
export type { RunObject } from './run-facts.ts';
