// The control-plane binaries and a test cluster.
export { BINARY_NAMES, REPO_ROOT, ensureBinaries, kruntimesCacheRoot } from './binaries.ts';
export { Cluster } from './cluster.ts';
export type { ClusterInfo, TestNamespace } from './cluster.ts';
export { ControlPlane } from './control-plane.ts';

// Clients, ports and users of that cluster.
export { kubeConfigFor, kubeconfigYaml } from './kubeconfig.ts';
export { EPHEMERAL_RANGE_FILE, LOOPBACK, freePorts, portFree } from './ports.ts';
export { ADMIN_USER, KUBE_PROXY_USER, nodeUser } from './users.ts';

// Waiting and failures.
export { waitFor } from './wait.ts';
export { failure } from './grpc-failure.ts';

// Processes under test.
export {
  executeToEnd,
  executionRequest,
  killGroups,
  numberWrittenTo,
  runtimeServerTempDirs,
  runtimeServerTempDirsAfterWait,
  startServerProcess,
  WALL_ENTRY,
} from './runtime-server-process.ts';
export type { ServerProcess, ServerProcessOptions } from './runtime-server-process.ts';
export { survivingGroupMembers, survivingProcesses } from './processes.ts';

// HTTPS and gRPC stubs, certificates and proxies.
export { call } from './https-client.ts';
export type { HttpAnswer } from './https-client.ts';
export { testCa, testClientCert, testServerCert } from './test-pki.ts';
export type { TestCert } from './test-pki.ts';
export { StallingProxy } from './stalling-proxy.ts';
export { HttpsStub, json, selfSignedCertificate } from './https-stub.ts';
export type { KeyPair, RecordedRequest, StubHandler } from './https-stub.ts';

// Namespaces and access.
export { NamespaceAccess, issuedServiceAccountTokens } from './namespace-access.ts';
export type { Rule } from './namespace-access.ts';
export { startArtifactGrantsStub } from './artifact-grants-server.ts';
export type { ArtifactGrantsStub } from './artifact-grants-server.ts';

// Object storage and tracing backends.
export { ObjectStore } from './object-store.ts';
export { Jaeger, jaegerLaunch } from './jaeger.ts';
export type { JaegerLaunch, JaegerSpan, JaegerTrace } from './jaeger.ts';

// Workload config for runtimed in tests.
export { testWorkloadConfig } from './workload-config.ts';

// Benchmark measurements.
export {
  RunPhaseWatch,
  apiServerPid,
  apiServerRequestDelta,
  apiServerRequests,
  formatApiServerRequestDelta,
  formatLatencies,
  percentile,
  processCpuSeconds,
  summarizeLatencies,
} from './bench.ts';
export type { ApiServerRequests, LatencySummary } from './bench.ts';

// Language toolchains for the runtime servers.
export { pythonTestVenv } from './python-venv.ts';
export { goEnvironment } from './go-environment.ts';

// Tallies of Runs and manifests.
export { LastPhases, tallyTasks } from './run-tally.ts';
