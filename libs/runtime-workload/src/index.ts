// The Deployment, Service and TLS Secret a Runtime runs as.
export {
  CONTAINERS,
  MANAGED_BY,
  RUNTIME_COMPONENT,
  SPEC_HASH_ANNOTATION,
  TLS_SECRET_KEYS,
  podCapacity,
  podLabelSelector,
  runIsolation,
  runtimeWorkload,
  runtimedTlsSecret,
  workloadProblems,
} from './workload.ts';
export type { RunIsolation, RuntimeServerListenMode, WorkloadConfig } from './workload.ts';
export type { Deployment, PodDisruptionBudget, Secret, Service } from './kube-types.ts';

// Node.js heap sizing from a container's memory limit.
export { memoryQuantityBytes, nodeHeapOptions } from './node-heap.ts';
