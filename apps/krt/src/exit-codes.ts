import { ApiException } from '@kubernetes/client-node';
import { KruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { InvocationError, InvocationTransportError } from '@kruntimes/sdk';

/**
 * krt's exit codes, one table (README):
 * 0 ok; 1 the function failed (error source `function`); 2 usage or invalid input;
 * 3 not found; 4 unauthenticated or forbidden; 5 unavailable, timeout or any other
 * platform error; 6 the run file of `krt run --local` does not match its lock; 7 a `krt retry`
 * that may repeat side effects was not confirmed (answered no, or no terminal and no --yes); 130 Ctrl-C
 * (128 + SIGINT, as shells report it) while `krt run` waited. A local task that did not
 * succeed is 1, like a failed function.
 */
export const EXIT = {
  ok: 0,
  functionError: 1,
  usage: 2,
  notFound: 3,
  unauthorized: 4,
  unavailable: 5,
  lockMismatch: 6,
  notConfirmed: 7,
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error krt reports as it is: one line for the user, and its exit code. */
export class CliError extends Error {
  readonly exitCode: ExitCode;

  constructor(exitCode: ExitCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

export function usageError(message: string): CliError {
  return new CliError(EXIT.usage, message);
}

/** The exit code of a kruntimes error code (gateway answers). */
export function exitCodeForErrorCode(code: ErrorCode): ExitCode {
  switch (code) {
    case 'FunctionFailed':
    case 'FunctionOutputInvalid':
      return EXIT.functionError;
    case 'InvalidRequest':
    case 'InvalidInvocationId':
    case 'UnsupportedMediaType':
    case 'PayloadTooLarge':
    case 'ArtifactNotDeclared':
    case 'ArtifactTooLarge':
    // krt sync: the Run name of the local run is taken by another Run (the user decides which goes).
    case 'OriginConflict':
    case 'CheckpointUnsupported':
    case 'CheckpointTooLarge':
    case 'InputSchemaInvalid':
      return EXIT.usage;
    case 'LockMismatch':
      return EXIT.lockMismatch;
    case 'RunNotFound':
    case 'RegistrationNotFound':
      return EXIT.notFound;
    case 'Unauthenticated':
    case 'Forbidden':
      return EXIT.unauthorized;
    case 'InvocationInFlight':
    // runtimed refused a snapshot that is not status.source's: the Run failed, nothing ran.
    case 'SourceMismatch':
    case 'Internal':
    case 'AuthorizationUnavailable':
    case 'RunNotReady':
    case 'OwnerUnavailable':
    case 'EpochMismatch':
    case 'RegistrationLost':
    case 'InvocationTimeout':
    case 'RegistrationConflict':
    case 'StaleAttempt':
    case 'InvalidTransition':
    case 'Conflict':
    case 'Unimplemented':
    // The Run's endpoint URL is not a route of this gateway: a platform mismatch, not the user's input.
    case 'RouteNotFound':
    case 'MethodNotAllowed':
    case 'ArtifactStoreUnavailable':
    case 'CheckpointNotStored':
      return EXIT.unavailable;
  }
}

/** The exit code of an API server answer. */
export function exitCodeForHttpStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return EXIT.unauthorized;
  if (status === 404) return EXIT.notFound;
  if (status === 400 || status === 422) return EXIT.usage;
  return EXIT.unavailable;
}

/** Any error thrown by a command, as an exit code. */
export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof InvocationError) return error.source === 'function' ? EXIT.functionError : exitCodeForErrorCode(error.code);
  if (error instanceof InvocationTransportError) return EXIT.unavailable;
  if (error instanceof ApiException) return exitCodeForHttpStatus(error.code);
  if (error instanceof KruntimesError) return exitCodeForErrorCode(error.code);
  return EXIT.unavailable;
}

/** One line saying what went wrong (never the whole client-node exception with headers). */
export function describeError(error: unknown): string {
  if (error instanceof CliError) return error.message;
  if (error instanceof InvocationError) {
    const where = error.local ? 'refused before sending' : `HTTP ${error.httpStatus ?? 0}`;
    return `${error.code} (${error.source}, ${where}): ${error.message} [invocation ${error.invocationId}]`;
  }
  if (error instanceof InvocationTransportError) {
    const sent = error.requestMayHaveBeenSent ? 'the request may have been sent: the function may have run' : 'the request was not sent';
    return `${error.message} (${sent}) [invocation ${error.invocationId}]`;
  }
  if (error instanceof ApiException) return `the API server answered HTTP ${error.code}: ${apiStatusMessage(error)}`;
  return error instanceof Error ? error.message : String(error);
}

/** The `message` of a Kubernetes Status body, else a short generic text. */
export function apiStatusMessage(error: ApiException<unknown>): string {
  const body: unknown = error.body;
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
  }
  const message = typeof parsed === 'object' && parsed !== null ? (parsed as { message?: unknown }).message : undefined;
  return typeof message === 'string' && message !== '' ? message : `status ${error.code}`;
}
