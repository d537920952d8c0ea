export * from './kube-types.ts';
export * from './workload.ts';
