import { METADATA_KEYS } from '@kruntimes/proto';
import { ClientError, Metadata } from 'nice-grpc';
import type { Status } from 'nice-grpc';

export interface CallFailure {
  readonly status: Status;
  readonly code: string | undefined;
  readonly source: string | undefined;
  readonly message: string;
}

/** Runs a call that must fail and returns its gRPC status and kruntimes trailers. */
export async function failure(call: (options: { onTrailer: (trailer: Metadata) => void }) => Promise<unknown>): Promise<CallFailure> {
  let trailer = Metadata();
  try {
    await call({
      onTrailer: (t) => {
        trailer = t;
      },
    });
  } catch (error) {
    if (!(error instanceof ClientError)) throw error;
    return {
      status: error.code,
      code: trailer.get(METADATA_KEYS.errorCode),
      source: trailer.get(METADATA_KEYS.errorSource),
      message: error.details,
    };
  }
  throw new Error('the call succeeded');
}
