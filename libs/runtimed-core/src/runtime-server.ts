import { invocationDeadlineMs } from '@kruntimes/api';
import { KruntimesError, errorCodeForGrpcStatus, isErrorCode } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { METADATA_KEYS, durationFromMillis, healthV1, runtimeServerV1 } from '@kruntimes/proto';
import { ClientError, Metadata, createChannel, createClient, createClientFactory } from 'nice-grpc';
import { runtimeServerTokenMiddleware } from './runtime-server-token.ts';
import type { Channel, Client } from 'nice-grpc';

/**
 * A failed call to the local Runtime Server, with the kruntimes code from its
 * `krt-error-code` trailer (or, for a transport failure, the most conservative reading
 * of the gRPC status) and whether the call definitely did not take effect.
 */
export class RuntimeServerError extends KruntimesError {
  /** True when the server answered with a kruntimes code: the outcome is known. */
  readonly answered: boolean;

  constructor(code: ErrorCode, message: string, answered: boolean, cause: unknown) {
    super(code, message, { cause });
    this.name = 'RuntimeServerError';
    this.answered = answered;
  }
}

export interface RegisterRequest {
  runUid: string;
  attempt: number;
  workdir: string;
  handler: string;
  env: Record<string, string>;
}

export interface ExecuteRequest {
  executionId: string;
  runUid: string;
  attempt: number;
  workdir: string;
  entrypoint: string;
  args: string[];
  env: Record<string, string>;
  timeoutMs: number | undefined;
  gracePeriodMs: number;
  /** Only for a task Run that declares artifacts: how the execution reaches runtimed's upload grants. */
  artifacts?: runtimeServerV1.ArtifactAccess;
  /** Only for a continuation attempt (status.resume): the verified checkpoint and the response. */
  resume?: runtimeServerV1.Resume;
}

/** runtimed's call to its local Runtime Server: one invocation of a registration it holds. */
export interface RuntimeServerInvocation {
  readonly registrationId: string;
  readonly invocationId: string;
  readonly payload: Uint8Array;
  /** The Runtime Server kills the invocation after this long and answers InvocationTimeout. */
  readonly timeoutMs: number;
  /** W3C trace context of runtimed's client span (tracing on), sent as gRPC metadata. */
  readonly traceparent?: string;
  readonly tracestate?: string | undefined;
}

function traceMetadata(traceparent: string, tracestate: string | undefined): Metadata {
  const metadata = Metadata({ traceparent });
  if (tracestate !== undefined) metadata.set('tracestate', tracestate);
  return metadata;
}

/**
 * The local Runtime Server ("Runtime Pods" in docs/architecture.md) as runtimed uses it. Addresses are a
 * loopback `host:port` or `unix:/abs/path` (dialled by nice-grpc as `unix:///abs/path`).
 */
export class RuntimeServerClient {
  readonly #channel: Channel;
  readonly #client: Client<runtimeServerV1.RuntimeServerDefinition>;
  readonly #health: Client<healthV1.HealthDefinition>;

  /** `tokenFile`: where the Runtime Server wrote the token its calls need (undefined: none). */
  constructor(address: string, tokenFile?: string) {
    this.#channel = createChannel(
      address.startsWith('unix:') && !address.startsWith('unix://') ? `unix://${address.slice('unix:'.length)}` : address,
      undefined,
      // grpc-js's per-call introspection counters, which nothing reads.
      { 'grpc.enable_channelz': 0 },
    );
    this.#client =
      tokenFile === undefined
        ? createClient(runtimeServerV1.RuntimeServerDefinition, this.#channel)
        : createClientFactory().use(runtimeServerTokenMiddleware(tokenFile)).create(runtimeServerV1.RuntimeServerDefinition, this.#channel);
    this.#health = createClient(healthV1.HealthDefinition, this.#channel);
  }

  close(): void {
    this.#channel.close();
  }

  async serving(signal?: AbortSignal): Promise<boolean> {
    const response = await this.#health.check(
      { service: runtimeServerV1.RuntimeServerDefinition.fullName },
      signal === undefined ? {} : { signal },
    );
    return response.status === healthV1.HealthCheckResponse_ServingStatus.SERVING;
  }

  register(request: RegisterRequest): Promise<runtimeServerV1.RegisterFunctionResponse> {
    return this.#call((options) => this.#client.registerFunction(request, options));
  }

  status(registrationId: string): Promise<runtimeServerV1.FunctionStatusResponse> {
    return this.#call((options) => this.#client.functionStatus({ registrationId }, options));
  }

  unregister(registrationId: string): Promise<runtimeServerV1.UnregisterFunctionResponse> {
    return this.#call((options) => this.#client.unregisterFunction({ registrationId }, options));
  }

  /**
   * One invocation. Never retried: a transport failure after dispatch is an unknown
   * outcome. Should the Runtime Server not answer within the timeout plus a margin, the
   * call is abandoned as InvocationTimeout; aborting `signal` (the caller went away)
   * cancels the call and rejects with the abort reason.
   */
  async invoke(request: RuntimeServerInvocation, signal: AbortSignal): Promise<runtimeServerV1.InvokeFunctionResponse> {
    // One controller for the deadline and the caller gone, one timer cleared at the end:
    // cheaper per call than AbortSignal.timeout plus AbortSignal.any.
    const abort = new AbortController();
    const deadline = { exceeded: false };
    const deadlineMs = invocationDeadlineMs('runtimeServer', request.timeoutMs);
    const timer = setTimeout(() => {
      deadline.exceeded = true;
      abort.abort();
    }, deadlineMs);
    const onCallerGone = (): void => {
      abort.abort(signal.reason);
    };
    if (signal.aborted) onCallerGone();
    else signal.addEventListener('abort', onCallerGone, { once: true });
    let trailer: Metadata | undefined;
    try {
      return await this.#client.invokeFunction(
        {
          registrationId: request.registrationId,
          invocationId: request.invocationId,
          payload: Buffer.from(request.payload.buffer, request.payload.byteOffset, request.payload.byteLength),
          timeout: durationFromMillis(request.timeoutMs),
        },
        {
          signal: abort.signal,
          ...(request.traceparent === undefined ? {} : { metadata: traceMetadata(request.traceparent, request.tracestate) }),
          onTrailer: (t) => {
            trailer = t;
          },
        },
      );
    } catch (error) {
      if (deadline.exceeded && !signal.aborted) {
        throw new RuntimeServerError('InvocationTimeout', `the Runtime Server did not answer within ${request.timeoutMs} ms`, false, error);
      }
      throw toRuntimeServerError(error, trailer ?? Metadata());
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onCallerGone);
    }
  }

  /** What became of one task attempt's execution (RUNNING, EXITED or UNKNOWN); bounded by `timeoutMs`. */
  execution(runUid: string, attempt: number, timeoutMs: number): Promise<runtimeServerV1.GetExecutionResponse> {
    return this.#call((options) => this.#client.getExecution({ runUid, attempt }, { ...options, signal: AbortSignal.timeout(timeoutMs) }));
  }

  cancel(executionId: string, gracePeriodMs: number): Promise<runtimeServerV1.CancelExecutionResponse> {
    return this.#call((options) => this.#client.cancelExecution({ executionId, gracePeriod: durationFromMillis(gracePeriodMs) }, options));
  }

  /**
   * Streams one execution's events. Aborting `signal` closes the stream, which makes the
   * Runtime Server cancel the execution: it never outlives this call.
   */
  async *execute(request: ExecuteRequest, signal: AbortSignal): AsyncGenerator<runtimeServerV1.ExecuteEvent> {
    let trailer = Metadata();
    try {
      yield* this.#client.execute(
        {
          executionId: request.executionId,
          runUid: request.runUid,
          attempt: request.attempt,
          workdir: request.workdir,
          entrypoint: request.entrypoint,
          args: request.args,
          env: request.env,
          gracePeriod: durationFromMillis(request.gracePeriodMs),
          ...(request.timeoutMs === undefined ? {} : { timeout: durationFromMillis(request.timeoutMs) }),
          ...(request.artifacts === undefined ? {} : { artifacts: request.artifacts }),
          ...(request.resume === undefined ? {} : { resume: request.resume }),
        },
        {
          signal,
          onTrailer: (t) => {
            trailer = t;
          },
        },
      );
    } catch (error) {
      throw toRuntimeServerError(error, trailer);
    }
  }

  async #call<T>(call: (options: { onTrailer: (trailer: Metadata) => void }) => Promise<T>): Promise<T> {
    let trailer = Metadata();
    try {
      return await call({
        onTrailer: (t) => {
          trailer = t;
        },
      });
    } catch (error) {
      throw toRuntimeServerError(error, trailer);
    }
  }
}

function toRuntimeServerError(error: unknown, trailer: Metadata): unknown {
  if (!(error instanceof ClientError)) return error;
  const code = trailer.get(METADATA_KEYS.errorCode);
  if (isErrorCode(code)) return new RuntimeServerError(code, error.details, true, error);
  return new RuntimeServerError(errorCodeForGrpcStatus(error.code), `Runtime Server unreachable or failed: ${error.message}`, false, error);
}

/**
 * A registration that the Runtime Server refused for good within this attempt: the
 * user's code did not load, or this attempt is already registered differently. Anything
 * else (unreachable server, timeout) is indeterminate and retried with the same attempt.
 */
export function isDefiniteRegistrationFailure(error: unknown): error is RuntimeServerError {
  return error instanceof RuntimeServerError && error.answered && DEFINITE_REGISTRATION_FAILURES.has(error.code);
}

const DEFINITE_REGISTRATION_FAILURES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'FunctionFailed',
  'FunctionOutputInvalid',
  'RegistrationConflict',
  'StaleAttempt',
  'InvalidRequest',
]);
