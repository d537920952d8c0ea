/**
 * Every bound of the kruntimes API in one place. Each is enforced three times: by the
 * CRD schema (libs/crds), by the code that writes status, and by the dataplane.
 */
export const BOUNDS = {
  /** status.endpoint.url, bytes. */
  endpointUrlBytes: 2048,
  /** status.endpoint.caBundle, bytes of PEM before base64. */
  caBundleBytes: 16 * 1024,
  /** Invoke request body, bytes. */
  requestBodyBytes: 1024 * 1024,
  /** X-Kruntime-Invocation-ID, bytes of visible ASCII. */
  invocationIdBytes: 128,
  /** Outputs (task outputs and invocation outputs share them). */
  outputKeyBytes: 63,
  outputCount: 16,
  outputValueBytes: 4 * 1024,
  /** status.message, bytes. */
  messageBytes: 1024,
  /** spec.source.inline, bytes (leaves room in the 1.5 MiB etcd object limit). */
  inlineSourceBytes: 256 * 1024,
  /** spec.env entries and their value size. */
  envCount: 64,
  envValueBytes: 4 * 1024,
  /** spec.retryPolicy.maxAttempts. */
  maxAttempts: 10,
  /** spec.retryPolicy backoff, seconds. */
  maxBackoffSeconds: 3600,
  /** Function handler reference (module:function or shell function name), bytes. */
  handlerBytes: 256,
  /** mode.function.invocationTimeoutSeconds and idleTimeoutSeconds. */
  maxInvocationTimeoutSeconds: 3600,
  maxIdleTimeoutSeconds: 7 * 24 * 3600,
  /** status.conditions entries. */
  conditionCount: 8,
  /** Kubernetes name lengths. */
  dnsLabelBytes: 63,
  dnsSubdomainBytes: 253,
  /** Captured stdout/stderr returned with one invocation, bytes each. */
  capturedStreamBytes: 64 * 1024,
  /** Invocation result (JSON), bytes; same as a request body. */
  resultBytes: 1024 * 1024,
  /** spec.artifacts.outputs and status.artifacts entries. */
  artifactCount: 16,
  /** artifactId, bytes. */
  artifactIdBytes: 63,
  /** spec.artifacts.outputs[].maxBytes: the largest single PUT that S3 accepts (5 GiB). */
  artifactMaxBytes: 5 * 1024 * 1024 * 1024,
  /** mediaType, bytes. */
  mediaTypeBytes: 255,
  /** ArtifactStore prefix, bytes. */
  artifactPrefixBytes: 256,
  /** status.waitingInput.schema: a JSON Schema as JSON text, bytes. */
  inputSchemaBytes: 16 * 1024,
  /** A response's data (RunInput spec.data, status.resume.input) as JSON text, bytes. */
  inputDataBytes: 64 * 1024,
  /** A checkpoint object, bytes (runtimed hands it to the continuation in one message). */
  checkpointBytes: 1024 * 1024,
  /** status.responses entries: the latest accepted responses. */
  responsesKept: 16,
  /** spec.replicas and spec.scaling.{min,max}Replicas. */
  maxReplicas: 1000,
  /** spec.scaling.spareRuns. */
  maxSpareRuns: 10_000,
  /** spec.scaling.scaleDownDelaySeconds and spec.drainSeconds. */
  maxScaleDownDelaySeconds: 24 * 3600,
  maxDrainSeconds: 24 * 3600,
} as const;

/** Defaults applied by the CRD schema and assumed by code when a field is absent. */
export const DEFAULTS = {
  runsPerPod: 1,
  replicas: 1,
  /** spec.scaling defaults. */
  minReplicas: 1,
  spareRuns: 0,
  scaleDownDelaySeconds: 300,
  /** spec.drainSeconds: how long a stopping Pod lets its running tasks finish. */
  drainSeconds: 300,
  /** retryPolicy.maxAttempts of a function Run or a retrySafe task. */
  maxAttempts: 3,
  /**
   * retryPolicy.maxAttempts of a task that is not retrySafe: it runs once, since a second
   * run could repeat side effects (an email sent, then a failure) nobody can undo.
   */
  notRetrySafeTaskMaxAttempts: 1,
  initialBackoffSeconds: 5,
  maxBackoffSeconds: 300,
  invocationTimeoutSeconds: 60,
  /** Function Runs with no idleTimeoutSeconds stay registered until their lifetime ends. */
  idleTimeoutSeconds: undefined,
  runtimedGrpcPort: 7443,
  runtimedPeerPort: 7444,
  /** Plaintext gRPC health only (kubelet gRPC probes cannot speak TLS); never carries a token. */
  runtimedHealthPort: 7445,
  /** Prometheus /metrics of runtimed (plaintext, on the Pod IP), the container port `metrics` that the chart's PodMonitor scrapes. */
  runtimedMetricsPort: 9464,
  runtimeServerPort: 7450,
  leaseDurationSeconds: 90,
  leaseRenewSeconds: 20,
  authzCacheTtlSeconds: 30,
  /**
   * Denied and unauthenticated answers are remembered much shorter than allowed ones (the
   * webhook authorizer's 30 s vs 5 min): a denial from a just-restarted API server must not
   * outlive its RBAC catching up.
   */
  authzDenialCacheTtlSeconds: 5,
  cancelGracePeriodSeconds: 10,
  artifactStoreRegion: 'us-east-1',
  artifactRetentionAfterRunDeleted: '24h',
  /** An upload grant expires after this long, or with the attempt's Lease if that comes first. */
  artifactGrantSeconds: 15 * 60,
} as const;
