export * from './kube-types.ts';
export * from './workload.ts';
export * from './node-heap.ts';
