import { ERROR_CODES, KruntimesError, errorFromCode, isKruntimesError } from '@kruntimes/errors';
import { METADATA_KEYS } from '@kruntimes/proto';
import { truncateUtf8 } from '@kruntimes/api';
import { ServerError, Status } from 'nice-grpc';
import type { Metadata, ServerMiddleware } from 'nice-grpc';
import type { Logger } from 'pino';

/** A gRPC status message stays readable in a log line and far below header limits. */
const STATUS_MESSAGE_BYTES = 4 * 1024;

/**
 * Server middleware that turns every error into the kruntimes wire form: the gRPC
 * status from the error table plus the `krt-error-code` and `krt-error-source`
 * trailers. Errors that are not KruntimesErrors are bugs: logged with their stack and
 * answered as Internal without leaking details.
 */
export function errorMiddleware(logger: Logger): ServerMiddleware {
  return async function* errorsToTrailers(call, context) {
    try {
      return yield* call.next(call.request, context);
    } catch (error) {
      if (error instanceof ServerError) throw error;
      // The client cancelled: nobody is listening for a status any more.
      if (context.signal.aborted) throw error;
      let typed: KruntimesError;
      if (isKruntimesError(error)) {
        typed = error;
      } else {
        logger.error({ err: error, method: call.method.path }, 'unexpected error');
        typed = new KruntimesError('Internal', 'internal error');
      }
      context.trailer.set(METADATA_KEYS.errorCode, typed.code);
      context.trailer.set(METADATA_KEYS.errorSource, typed.source);
      // nice-grpc's Status names are the gRPC status names of the error table.
      throw new ServerError(Status[ERROR_CODES[typed.code].grpc], truncateUtf8(typed.message, STATUS_MESSAGE_BYTES).value);
    }
  };
}

/**
 * Rebuilds the typed error of a failed call from its trailers (client side). Pass the
 * trailer seen through the call's `onTrailer` option.
 */
export function errorFromTrailer(trailer: Metadata | undefined, message: string): KruntimesError | undefined {
  const code = trailer?.get(METADATA_KEYS.errorCode);
  return typeof code === 'string' ? errorFromCode(code, message) : undefined;
}
