/**
 * gRPC status codes by name. Numeric values are fixed by the gRPC specification; they
 * are spelled out here so that this domain lib needs no gRPC runtime.
 */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatusName = keyof typeof GRPC_STATUS;
export type GrpcStatusCode = (typeof GRPC_STATUS)[GrpcStatusName];

/** Who caused an error: the platform, or the user's function code. */
export type ErrorSource = 'platform' | 'function';

export interface ErrorCodeSpec {
  grpc: GrpcStatusName;
  http: number;
  source: ErrorSource;
  /** Whether the dataplane should enqueue recovery of the Run when it answers this. */
  triggersRecovery: boolean;
  summary: string;
}

/**
 * The one table from stable error code to gRPC status and HTTP status
 * (the table under "Response" in docs/invoke-contract.md). The gateway maps runtimed's answers back through the same table,
 * using the code carried in gRPC metadata, so both sides always agree.
 */
export const ERROR_CODES = {
  InvalidRequest: {
    grpc: 'INVALID_ARGUMENT',
    http: 400,
    source: 'platform',
    triggersRecovery: false,
    summary: 'malformed path, body or header',
  },
  InvalidInvocationId: {
    grpc: 'INVALID_ARGUMENT',
    http: 400,
    source: 'platform',
    triggersRecovery: false,
    summary: 'invocation ID is not 1-128 bytes of visible ASCII',
  },
  UnsupportedMediaType: {
    grpc: 'INVALID_ARGUMENT',
    http: 415,
    source: 'platform',
    triggersRecovery: false,
    summary: 'Content-Type is not application/json',
  },
  Unauthenticated: {
    grpc: 'UNAUTHENTICATED',
    http: 401,
    source: 'platform',
    triggersRecovery: false,
    summary: 'no bearer token, or the API server rejected it',
  },
  Forbidden: {
    grpc: 'PERMISSION_DENIED',
    http: 403,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the caller may not get this Run',
  },
  RunNotFound: {
    grpc: 'NOT_FOUND',
    http: 404,
    source: 'platform',
    triggersRecovery: false,
    summary: 'no Run with this UID in this namespace and Runtime',
  },
  PayloadTooLarge: { grpc: 'OUT_OF_RANGE', http: 413, source: 'platform', triggersRecovery: false, summary: 'request body over the limit' },
  InvocationInFlight: {
    grpc: 'RESOURCE_EXHAUSTED',
    http: 429,
    source: 'platform',
    triggersRecovery: false,
    summary: 'an invocation of this Run is already in flight',
  },
  FunctionFailed: {
    grpc: 'UNKNOWN',
    http: 500,
    source: 'function',
    triggersRecovery: false,
    summary: 'the handler raised or exited non-zero',
  },
  FunctionOutputInvalid: {
    grpc: 'UNKNOWN',
    http: 500,
    source: 'function',
    triggersRecovery: false,
    summary: 'the handler returned a result or outputs over the bounds',
  },
  Internal: { grpc: 'INTERNAL', http: 500, source: 'platform', triggersRecovery: false, summary: 'unexpected platform error' },
  AuthorizationUnavailable: {
    grpc: 'UNAVAILABLE',
    http: 503,
    source: 'platform',
    // The API server being down says nothing about the Run's owner.
    triggersRecovery: false,
    summary: 'the API server could not be asked whether the caller may get this Run; retry',
  },
  RunNotReady: {
    grpc: 'UNAVAILABLE',
    http: 503,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the Run is not Ready (scheduling, registering, recovering, terminating)',
  },
  OwnerUnavailable: {
    grpc: 'UNAVAILABLE',
    http: 503,
    source: 'platform',
    triggersRecovery: true,
    summary: 'the owning runtimed is stale or unreachable',
  },
  EpochMismatch: {
    grpc: 'FAILED_PRECONDITION',
    http: 503,
    source: 'platform',
    triggersRecovery: false,
    summary: 'a peer request named another attempt or Pod than the owner holds',
  },
  RegistrationLost: {
    grpc: 'UNAVAILABLE',
    http: 503,
    source: 'platform',
    triggersRecovery: true,
    summary: 'the Runtime Server no longer holds the registration',
  },
  InvocationTimeout: {
    grpc: 'DEADLINE_EXCEEDED',
    http: 504,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the invocation did not finish within its timeout',
  },
  RegistrationConflict: {
    grpc: 'ALREADY_EXISTS',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'same Run and attempt registered with another configuration',
  },
  RegistrationNotFound: {
    grpc: 'NOT_FOUND',
    http: 404,
    source: 'platform',
    triggersRecovery: false,
    summary: 'unknown or superseded registration ID',
  },
  StaleAttempt: {
    grpc: 'FAILED_PRECONDITION',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'a lower attempt than the one registered',
  },
  InvalidTransition: {
    grpc: 'FAILED_PRECONDITION',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the Run state machine refuses this event',
  },
  Conflict: { grpc: 'ABORTED', http: 409, source: 'platform', triggersRecovery: false, summary: 'the object changed since it was read' },
  Unimplemented: { grpc: 'UNIMPLEMENTED', http: 501, source: 'platform', triggersRecovery: false, summary: 'not implemented' },
  RouteNotFound: {
    grpc: 'UNIMPLEMENTED',
    http: 404,
    source: 'platform',
    triggersRecovery: false,
    summary: 'no such HTTP route on the gateway',
  },
  MethodNotAllowed: {
    grpc: 'UNIMPLEMENTED',
    http: 405,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the route exists but not for this HTTP method',
  },
  ArtifactNotDeclared: {
    grpc: 'INVALID_ARGUMENT',
    http: 400,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the artifact ID is not in spec.artifacts, or its media type differs from the declared one',
  },
  ArtifactTooLarge: {
    grpc: 'OUT_OF_RANGE',
    http: 413,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the artifact is larger than its declared maxBytes',
  },
  ArtifactStoreUnavailable: {
    grpc: 'UNAVAILABLE',
    http: 503,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the ArtifactStore, its credentials Secret or the object store cannot be reached',
  },
  CheckpointUnsupported: {
    grpc: 'FAILED_PRECONDITION',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'waiting for input needs a task Run with spec.artifacts on a Runtime that declares checkpoint-v1',
  },
  CheckpointTooLarge: {
    grpc: 'OUT_OF_RANGE',
    http: 413,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the checkpoint is larger than 1 MiB',
  },
  CheckpointNotStored: {
    grpc: 'FAILED_PRECONDITION',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the checkpoint object is missing from the store or differs from what was granted',
  },
  InputSchemaInvalid: {
    grpc: 'INVALID_ARGUMENT',
    http: 400,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the input schema is not a JSON Schema, or is larger than 16 KiB',
  },
  // krt run --local and krt sync (docs/local-mode.md).
  LockMismatch: {
    grpc: 'FAILED_PRECONDITION',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the resolved source or inputs of a local run differ from its lock file (re-lock with --update-lock)',
  },
  // The execution snapshot (docs/lifecycle.md "Source snapshot").
  SourceMismatch: {
    grpc: 'FAILED_PRECONDITION',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the source runtimed was about to run is not the snapshot recorded in status.source (nothing ran; the Run failed)',
  },
  OriginConflict: {
    grpc: 'ALREADY_EXISTS',
    http: 409,
    source: 'platform',
    triggersRecovery: false,
    summary: 'the Run name of a synced local run is taken by a Run of another origin',
  },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

export function grpcStatusOf(code: ErrorCode): GrpcStatusCode {
  return GRPC_STATUS[ERROR_CODES[code].grpc];
}

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CODES[code].http;
}

/**
 * The code for a gRPC status that arrived without a kruntimes code (a transport
 * failure, or a peer of another version): the most conservative reading of it.
 */
export function errorCodeForGrpcStatus(status: GrpcStatusCode): ErrorCode {
  switch (status) {
    case GRPC_STATUS.INVALID_ARGUMENT:
      return 'InvalidRequest';
    case GRPC_STATUS.UNAUTHENTICATED:
      return 'Unauthenticated';
    case GRPC_STATUS.PERMISSION_DENIED:
      return 'Forbidden';
    case GRPC_STATUS.NOT_FOUND:
      return 'RunNotFound';
    case GRPC_STATUS.OUT_OF_RANGE:
      return 'PayloadTooLarge';
    case GRPC_STATUS.RESOURCE_EXHAUSTED:
      return 'InvocationInFlight';
    case GRPC_STATUS.DEADLINE_EXCEEDED:
      return 'InvocationTimeout';
    case GRPC_STATUS.UNAVAILABLE:
      return 'OwnerUnavailable';
    case GRPC_STATUS.FAILED_PRECONDITION:
      return 'EpochMismatch';
    case GRPC_STATUS.ALREADY_EXISTS:
      return 'RegistrationConflict';
    case GRPC_STATUS.ABORTED:
      return 'Conflict';
    case GRPC_STATUS.UNIMPLEMENTED:
      return 'Unimplemented';
    case GRPC_STATUS.OK:
    case GRPC_STATUS.CANCELLED:
    case GRPC_STATUS.UNKNOWN:
    case GRPC_STATUS.INTERNAL:
    case GRPC_STATUS.DATA_LOSS:
      return 'Internal';
  }
}
