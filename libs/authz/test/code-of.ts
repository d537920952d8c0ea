import { isKruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';

/** What an authorization ended with: 'ok', or the kruntimes code it was refused with (anything else is rethrown). */
export async function codeOf(promise: Promise<unknown>): Promise<ErrorCode | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (isKruntimesError(error)) return error.code;
    throw error;
  }
}
