/**
 * gRPC metadata keys of the kruntimes wire contract (documented in the .proto files).
 * Lower case, as HTTP/2 requires.
 */
export const METADATA_KEYS = {
  /** Trailer: the stable kruntimes error code of a failed call (libs/errors). */
  errorCode: 'krt-error-code',
  /** Trailer: `platform` or `function`: who caused the error. */
  errorSource: 'krt-error-source',
  /** Trailer of a failed FunctionRuntime.InvokeFunction: the invocation ID. */
  invocationId: 'krt-invocation-id',
  /** Request metadata of FunctionRuntime: `Bearer <token>` of the original caller. */
  authorization: 'authorization',
} as const;
