import { ERROR_CODES, grpcStatusOf, httpStatusOf, isErrorCode } from './error-codes.ts';
import type { ErrorCode, ErrorSource, GrpcStatusCode } from './error-codes.ts';

/** The JSON shape of every error response body of the dataplane. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  source: ErrorSource;
}

/**
 * A typed error with a stable code. Thrown by libs and services; translated to gRPC and
 * HTTP only at the edges, through the table in error-codes.ts.
 */
export class KruntimesError extends Error {
  readonly code: ErrorCode;
  /** Terminal errors are not retried by reconcilers or clients. */
  readonly terminal: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; terminal?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'KruntimesError';
    this.code = code;
    this.terminal = options.terminal ?? false;
  }

  get grpcStatus(): GrpcStatusCode {
    return grpcStatusOf(this.code);
  }

  get httpStatus(): number {
    return httpStatusOf(this.code);
  }

  get source(): ErrorSource {
    return ERROR_CODES[this.code].source;
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, source: this.source };
  }
}

export function isKruntimesError(error: unknown, code?: ErrorCode): error is KruntimesError {
  return error instanceof KruntimesError && (code === undefined || error.code === code);
}

/** Rebuilds a typed error from a code carried over the wire; unknown codes become Internal. */
export function errorFromCode(code: string, message: string): KruntimesError {
  return new KruntimesError(isErrorCode(code) ? code : 'Internal', message);
}
