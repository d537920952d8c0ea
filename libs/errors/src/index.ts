// The one error table, and its mapping to gRPC status codes.
export { ERROR_CODES, GRPC_STATUS, errorCodeForGrpcStatus, isErrorCode } from './error-codes.ts';
export type { ErrorCode, ErrorSource, GrpcStatusCode } from './error-codes.ts';

// The error class that carries a code across components.
export { KruntimesError, errorFromCode, isKruntimesError } from './kruntimes-error.ts';
