export * from './collection.ts';
export * from './gateway-endpoint.ts';
export * from './manager.ts';
export * from './metrics.ts';
export * from './runtime-status.ts';
export * from './rbac.ts';
export * from './runtime-tls.ts';
