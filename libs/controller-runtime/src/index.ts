export { Controller } from './controller.ts';
export type { ControllerLogger, ControllerOptions, ReconcileResult, Reconciler } from './controller.ts';
export { DEFAULT_BACKOFF, exponentialFailureRateLimiter } from './rate-limiter.ts';
export type { ExponentialBackoffOptions, RateLimiter } from './rate-limiter.ts';
export { WorkQueue } from './work-queue.ts';
export { asReconciler } from './object-reconciler.ts';
export type { CacheReader } from './cache-reader.ts';
export type { AsReconcilerOptions, ObjectCache, ObjectReconciler, ObjectRef } from './object-reconciler.ts';
export { ControllerGroup } from './controller-group.ts';
export type { ControllerGroupOptions, Worker } from './controller-group.ts';
export { SharedInformer } from './informer.ts';
export type { InformerEventHandler, ListChunk, ListPage, SharedInformerOptions, Transform } from './informer.ts';
export { informerIndex } from './informer-index.ts';
export type { CachedObject, IndexFunction, InformerIndex } from './informer-index.ts';
export { LeaderElector } from './leader-election.ts';
export type { ElectorLogger, LeaderCallbacks, LeaderElectionOptions } from './leader-election.ts';
export { LeaderElectionMetrics } from './leader-election-metrics.ts';
export { PROCESS_GAUGES, ProcessMetrics, observeProcessGauges, renderProcessMetrics } from './process-metrics.ts';
export type { DelayHistogram, GaugeMeter, ProcessMetricsOptions, ProcessSample } from './process-metrics.ts';
export { SecondsHistogram, histogramLines, sampleLines } from './prometheus-text.ts';
export { Manager } from './manager.ts';
export { leaseFromFlags, positiveNumber } from './lease-flags.ts';
export type { LeaseFlagDefaults, LeaseFlagValues } from './lease-flags.ts';
export { SERVICE_OPTIONS, parseServiceFlags, serviceConfig, serviceLogLevel } from './service-flags.ts';
export type { ServiceConfig, ServiceFlagValues, ServiceFlags } from './service-flags.ts';
export { serviceProcess } from './service-process.ts';
export type { ServiceControllerOptions, ServiceParts, ServiceProcessOptions } from './service-process.ts';
export { runServiceMain } from './service-main.ts';
export type { ServiceMain } from './service-main.ts';
export type { Elector, ManagerLeaderElection, ManagerLogger, ManagerOptions, Runnable } from './manager.ts';
export { decideLeaseRound } from './lease-round.ts';
export type { LeaseObservation, LeaseRound, LeaseRoundAction, LeaseRoundInput } from './lease-round.ts';
export { systemMonotonicClock } from './monotonic-clock.ts';
export type { MonotonicClock } from './monotonic-clock.ts';
export { objectKey, splitObjectKey } from './object-key.ts';
export type { ReadonlyDeep } from './object-key.ts';
export { isPodReady, serviceEndpoints } from './service-endpoints.ts';
export type { ServiceEndpoint } from './service-endpoints.ts';
export { metricsEndpointRunnable, startMetricsEndpoint } from './metrics-endpoint.ts';
export type { MetricsEndpoint } from './metrics-endpoint.ts';
export {
  CREDENTIAL_HEADERS,
  PROMETHEUS_TEXT,
  decidePlaintextRequest,
  metricsRoutes,
  parseListenAddress,
  startPlaintextEndpoint,
} from './plaintext-endpoint.ts';
export type {
  ListenAddress,
  PlaintextAnswer,
  PlaintextDecision,
  PlaintextEndpoint,
  PlaintextRequest,
  PlaintextRoute,
  PlaintextRoutes,
} from './plaintext-endpoint.ts';
export { startOtelMetricsEndpoint } from './otel-metrics-endpoint.ts';
export type { OtelMetricsEndpoint, OtelMetricsEndpointOptions } from './otel-metrics-endpoint.ts';
export { healthEndpointRunnable, startHealthEndpoint } from './health-endpoint.ts';
export type { HealthEndpoint } from './health-endpoint.ts';
export { decideReadiness } from './health.ts';
export type { ManagerPhase, Readiness } from './health.ts';
export { InformerFactory, watchPath, watchSpecKey } from './informer-factory.ts';
export type { AnyProjection, InformerFactoryOptions, KindProjection, Projection, WatchOptions, WatchSpec } from './informer-factory.ts';
export { ensureOwned, planOwned, specHashed } from './ensure-owned.ts';
export type {
  ControllerOwner,
  DesiredObject,
  EnsureOwnedRequest,
  EnsureOwnedResult,
  OwnedObjectWriter,
  IdentifiedObject,
  OwnedPlan,
  OwnedRefusal,
} from './ensure-owned.ts';
export { RecencyBoundedMap } from './recency-bounded-map.ts';
export { CONNECTION_POOL_RENEW_MS, PooledKubeConfig, loadKubeConfig } from './pooled-kube-config.ts';
export { DEFAULT_EVENT_WINDOW_MS, EVENT_RECORDER_RULES, EventRecorder } from './event-recorder.ts';
export type { EventRecorderOptions, EventRepeatPatch, EventWriter } from './event-recorder.ts';
export { decideEventWrite, eventKey, isEventReason } from './event-aggregation.ts';
export type { EventOccurrence, EventType, EventWrite, InvolvedObject, SeenEvent } from './event-aggregation.ts';
export { PerKeyInterval } from './per-key-interval.ts';
