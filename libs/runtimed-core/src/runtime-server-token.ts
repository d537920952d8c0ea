import { readFile } from 'node:fs/promises';
import { healthV1 } from '@kruntimes/proto';
import { ClientError, Metadata, Status } from 'nice-grpc';
import type { CallOptions, ClientMiddleware, ClientMiddlewareCall } from 'nice-grpc';

/** Health is open on the Runtime Server (see its apiTokenMiddleware). */
const OPEN_SERVICE_PREFIX = `/${healthV1.HealthDefinition.fullName}/`;

/**
 * Client middleware: each call to the Runtime Server carries the token it wrote to
 * `tokenFile` at its start. The token is read once and again when a call is refused as
 * Unauthenticated (the Runtime Server restarted with a new one): that call is sent once
 * more, which is safe because a refused call ran nothing.
 */
export function runtimeServerTokenMiddleware(tokenFile: string): ClientMiddleware {
  let token: string | undefined;
  const current = async (): Promise<string> => (token ??= (await readFile(tokenFile, 'utf8')).trim());
  return async function* withRuntimeServerToken<Request, Response>(
    call: ClientMiddlewareCall<Request, Response>,
    options: CallOptions,
  ): Responses<Response> {
    if (call.method.path.startsWith(OPEN_SERVICE_PREFIX)) return yield* call.next(call.request, options) as Responses<Response>;
    for (let attempt = 1; ; attempt++) {
      const metadata = Metadata(options.metadata).set('authorization', `Bearer ${await current()}`);
      const answered = { yes: false };
      try {
        const responses = call.next(call.request, { ...options, metadata }) as Responses<Response>;
        return yield* tracked(responses, answered);
      } catch (error) {
        const refused = error instanceof ClientError && error.code === Status.UNAUTHENTICATED && !answered.yes;
        if (!refused || attempt >= 2) throw error;
        token = undefined;
      }
    }
  };
}

/** A call's responses as a middleware passes them on (a unary call's is its return value). */
type Responses<Response> = AsyncGenerator<Response, Response | undefined, undefined>;

/** Passes a call's responses through, noting that one came (after that, a failure is no refusal). */
async function* tracked<T, R>(responses: AsyncGenerator<T, R, undefined>, answered: { yes: boolean }): AsyncGenerator<T, R, undefined> {
  for (;;) {
    const step = await responses.next();
    if (step.done === true) return step.value;
    answered.yes = true;
    yield step.value;
  }
}
