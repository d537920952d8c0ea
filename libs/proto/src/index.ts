/**
 * The kruntimes gRPC APIs, generated from proto/ (see README.md). One namespace per
 * proto package, because both packages define e.g. InvokeFunctionRequest.
 */
export * as runtimeServerV1 from './generated/kruntimes/runtimeserver/v1/runtime_server.ts';
export * as runtimedV1 from './generated/kruntimes/runtimed/v1/function_runtime.ts';
export * as artifactGrantsV1 from './generated/kruntimes/runtimed/v1/artifact_grants.ts';
export * as healthV1 from './generated/grpc/health/v1/health.ts';

// gRPC metadata keys and google.protobuf.Duration conversions.
export { METADATA_KEYS } from './metadata.ts';
export { durationFromMillis, millisFromDuration } from './duration.ts';
