import { ERROR_CODES } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { METADATA_KEYS, runtimedV1 } from '@kruntimes/proto';
import { ServerCredentials } from '@grpc/grpc-js';
import { ServerError, Status, createServer } from 'nice-grpc';
import type { CallContext, Server } from 'nice-grpc';
import type { TestCert } from '@kruntimes/testing';

export interface ReceivedCall {
  request: runtimedV1.InvokeFunctionRequest;
  metadata: Record<string, string>;
}

export type Behaviour = (
  request: runtimedV1.InvokeFunctionRequest,
  context: CallContext,
) => Promise<Partial<runtimedV1.InvokeFunctionResponse>>;

/** Thrown by a behaviour: answered with the kruntimes trailers, as runtimed does. */
export class KrtFailure extends Error {
  readonly code: ErrorCode;
  readonly withTrailers: boolean;
  constructor(code: ErrorCode, message: string, withTrailers = true) {
    super(message);
    this.code = code;
    this.withTrailers = withTrailers;
  }
}

/**
 * A real FunctionRuntime gRPC server over TLS, in-process: what the gateway talks to in
 * its unit and HTTP tests before runtimed serves the API. Records every call.
 */
export class TestFunctionRuntime {
  readonly calls: ReceivedCall[] = [];
  behaviour: Behaviour = (request) => Promise.resolve({ result: request.payload });
  readonly #server: Server;
  port = 0;

  constructor() {
    this.#server = createServer();
    this.#server.add(runtimedV1.FunctionRuntimeDefinition, {
      invokeFunction: async (request, context) => {
        const metadata: Record<string, string> = {};
        for (const [key, value] of context.metadata) metadata[key] = String(value);
        this.calls.push({ request, metadata });
        try {
          const answer = await this.behaviour(request, context);
          return { invocationId: request.invocationId, result: Buffer.alloc(0), outputs: {}, attempt: 1, ...answer };
        } catch (error) {
          if (!(error instanceof KrtFailure)) throw error;
          if (error.withTrailers) {
            context.trailer.set(METADATA_KEYS.errorCode, error.code);
            context.trailer.set(METADATA_KEYS.errorSource, ERROR_CODES[error.code].source);
            context.trailer.set(METADATA_KEYS.invocationId, request.invocationId);
          }
          throw new ServerError(Status[ERROR_CODES[error.code].grpc], error.message);
        }
      },
    });
  }

  async listen(cert: TestCert, host = '127.0.0.1', port = 0): Promise<number> {
    this.port = await this.#server.listen(
      `${host}:${port}`,
      ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(cert.certPem), private_key: Buffer.from(cert.keyPem) }], false),
    );
    return this.port;
  }

  async stop(): Promise<void> {
    this.#server.forceShutdown();
    return Promise.resolve();
  }
}
