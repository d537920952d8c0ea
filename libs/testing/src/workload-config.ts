import type { WorkloadConfig } from '@kruntimes/runtime-workload';

/**
 * The controller-manager's workload settings in tests: the local node runs these images as
 * processes, so their names only need to be stable. `overrides` adds what a test tunes
 * (a short termination grace, the gateway).
 */
export function testWorkloadConfig(overrides: Partial<WorkloadConfig> = {}): WorkloadConfig {
  return {
    runtimedImage: 'kruntimes/runtimed:dev',
    runtimeServerImages: { python: 'kruntimes/runtime-server-python:dev', bash: 'kruntimes/runtime-server-bash:dev' },
    serviceAccountName: 'default',
    runtimeServerListen: 'podIP',
    // Until the local node runs hostUsers: false Pods in user namespaces of their own.
    runIsolation: 'sharedUser',
    ...overrides,
  };
}
