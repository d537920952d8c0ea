export { Gateway, READINESS_PATH } from './gateway.ts';
export { UsageError, gatewayConfig, parseGatewayFlags, startUpstreamResolver } from './config.ts';
export type { GatewayConfig, GatewayFlags, ListenAddress, ResolveMode } from './config.ts';
export { conductOf, decideShutdownDelayMs } from './shutdown.ts';
export { startGatewayProcess } from './process.ts';
export type { GatewayProcess } from './process.ts';
export { gatewayLogDestination } from './log-destination.ts';
export type { GatewayLogDestination } from './log-destination.ts';
export type { PhaseConduct, ShutdownPhase } from './shutdown.ts';
export type { GatewayOptions } from './gateway.ts';
export {
  DnsResolver,
  EndpointSliceResolver,
  EndpointsResolver,
  GRPC_PORT_NAME,
  hostPort,
  readyEndpointsOfSlices,
  runtimedServerName,
} from './resolver.ts';
export type { UpstreamAddress, UpstreamResolver } from './resolver.ts';
export { Forwarder } from './forwarder.ts';
export type { ForwardRequest, ForwardResult, ForwarderOptions } from './forwarder.ts';
export { NO_METRICS, startMetricsServer } from './metrics.ts';
export type { GatewayMetrics, MetricsServer, RouteLabel } from './metrics.ts';
export { httpErrorOf, httpErrorOfGrpcFailure } from './error-mapping.ts';
export type { GrpcFailure, HttpError } from './error-mapping.ts';
export {
  TIMEOUT_HEADER,
  checkContentLength,
  checkContentType,
  invocationIdOf,
  invocationTimeoutMs,
  isDns1035Label,
  parseInvoke,
  parseInvokePath,
  parseJsonBody,
  pathOf,
  traceContext,
} from './invoke-request.ts';
export type { CheckedInvokeRequest, InvokeRoute, InvokeTarget, ParsedInvoke, PathMatch, RequestHeaders } from './invoke-request.ts';
export { readBoundedBody } from './body.ts';
export { GATEWAY_ENDPOINTSLICE_RBAC_RULES, GATEWAY_RBAC_RULES } from './rbac.ts';
export { OwnerHints, decideHintUpdate, decideUpstreams, hintKey, parseNamedOwner } from './owner-hints.ts';
export type { AnsweredInvoke, HintUpdate, NamedOwner, OwnerHint, OwnerHintsOptions, UpstreamChoice } from './owner-hints.ts';
export { INVOKE_ERROR_CODES, INVOKE_OPENAPI_FILE, INVOKE_PATHS, invokeOpenApiDocument, renderInvokeOpenApi } from './openapi.ts';
