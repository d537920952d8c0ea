export * from './address-pool.ts';
export * from './backoff.ts';
export * from './config.ts';
export * from './errors.ts';
export * from './local-node.ts';
export type { LocalNodeEvent } from './pod-runtime.ts';
export { CONTAINER_ROOT_ENV } from './volumes.ts';
export { POD_IP_ENV } from './env.ts';
