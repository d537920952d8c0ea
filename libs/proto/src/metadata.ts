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
  /**
   * Trailer of FunctionRuntime.InvokeFunction on the gRPC port, success or failure, once the
   * call was routed: the IP of the owner Pod whose runtimed served it (this one) or was
   * forwarded to. Nothing secret (a Pod address); the gateway's owner hint (invoke-contract.md).
   */
  ownerAddress: 'krt-owner-address',
  /** Trailer beside krt-owner-address: the Run's attempt that owner serves (the epoch, a decimal integer). */
  ownerEpoch: 'krt-owner-epoch',
  /** Request metadata of FunctionRuntime: `Bearer <token>` of the original caller. */
  authorization: 'authorization',
} as const;
