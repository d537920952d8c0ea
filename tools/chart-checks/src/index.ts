export * from './chart.ts';
export * from './dashboards.ts';
export * from './exported-metrics.ts';
export * from './promql.ts';
export * from './rbac-rules.ts';
export * from './workspace.ts';
export * from './values-schema.ts';
