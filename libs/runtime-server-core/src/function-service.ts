import { BOUNDS, isUid, isValidInvocationId, utf8ByteLength, validateOutputs } from '@kruntimes/api';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import { ATTR, SpanKind, endFailed, parentOf, remoteParent, startSpan } from '@kruntimes/tracing';
import type { Span, Tracer } from '@kruntimes/tracing';
import type { InvocationResult, LanguageAdapter, LoadedFunction } from './adapter.ts';
import type { Clock } from './clock.ts';
import { RegistrationTable } from './registration-table.ts';
import type { RunSandbox, RunWall } from './run-wall.ts';
import type { FunctionConfig, Registration, RegistrationKey } from './registration-table.ts';
import { isAbsolute } from 'node:path';

export interface RegisterRequest extends RegistrationKey, FunctionConfig {}

export interface FunctionInvokeRequest {
  readonly registrationId: string;
  readonly invocationId: string;
  readonly payload: Uint8Array;
  readonly timeoutMs: number | undefined;
  /** The caller's W3C trace context (runtimed's client span), used only with tracing on. */
  readonly traceparent?: string | undefined;
  readonly tracestate?: string | undefined;
}

const INVOKE_RPC = 'kruntimes.runtimeserver.v1.RuntimeServer/InvokeFunction';

export interface FunctionServiceOptions {
  readonly adapter: LanguageAdapter;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly newId: () => string;
  /** Tracing on: a server span per invocation and a child span for the handler. */
  readonly tracer?: Tracer | undefined;
  /** Where each registration's processes run, as which user. */
  readonly wall: RunWall;
}

/**
 * Registrations and invocations of one Runtime Server: the table's rules applied to
 * real loaded functions. Transport-free; the gRPC layer only translates.
 */
export class FunctionService {
  readonly #table: RegistrationTable;
  readonly #adapter: LanguageAdapter;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #tracer: Tracer | undefined;
  readonly #wall: RunWall;
  /** Loaded functions of READY registrations, by registration ID. */
  readonly #loaded = new Map<string, LoadedFunction>();
  /** Loads in progress, shared by identical concurrent RegisterFunction calls. */
  readonly #starting = new Map<string, Promise<void>>();

  constructor(options: FunctionServiceOptions) {
    this.#adapter = options.adapter;
    this.#logger = options.logger;
    this.#clock = options.clock;
    this.#tracer = options.tracer;
    this.#wall = options.wall;
    this.#table = new RegistrationTable({ clock: options.clock, newId: options.newId });
  }

  async register(request: RegisterRequest): Promise<{ registrationId: string; created: boolean }> {
    validateRegister(request);
    this.#adapter.prepare(request);
    const outcome = this.#table.register(request, request);
    const id = outcome.registration.id;
    if (outcome.kind === 'existing') {
      await this.#starting.get(id);
      return { registrationId: id, created: false };
    }
    const logger = this.#logger.child({ runUid: request.runUid, attempt: request.attempt, registrationId: id });
    if (outcome.superseded !== undefined) {
      logger.info({ superseded: outcome.superseded.id, supersededAttempt: outcome.superseded.attempt }, 'superseding registration');
      await this.#release(outcome.superseded.id);
    }
    const start = this.#load(outcome.registration, logger);
    this.#starting.set(id, start);
    try {
      await start;
    } finally {
      this.#starting.delete(id);
    }
    return { registrationId: id, created: true };
  }

  status(registrationId: string): Registration {
    return this.#table.get(registrationId);
  }

  async unregister(registrationId: string): Promise<boolean> {
    const removed = this.#table.unregister(registrationId);
    if (removed === undefined) return false;
    this.#logger.info({ runUid: removed.runUid, attempt: removed.attempt, registrationId }, 'unregistered');
    await this.#release(registrationId);
    return true;
  }

  async invoke(request: FunctionInvokeRequest): Promise<InvocationResult> {
    const tracer = this.#tracer;
    if (tracer === undefined) return this.#invoke(request, undefined);
    const span = startSpan(tracer, INVOKE_RPC, SpanKind.SERVER, remoteParent(request.traceparent, request.tracestate), {
      'rpc.system': 'grpc',
      'rpc.service': 'kruntimes.runtimeserver.v1.RuntimeServer',
      'rpc.method': 'InvokeFunction',
      [ATTR.invocationId]: request.invocationId.slice(0, 128),
    });
    try {
      const result = await this.#invoke(request, { tracer, span });
      span.end();
      return result;
    } catch (error) {
      endFailed(span, isKruntimesError(error) ? error.code : 'Internal', error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  async #invoke(request: FunctionInvokeRequest, trace: { tracer: Tracer; span: Span } | undefined): Promise<InvocationResult> {
    const { payload, timeoutMs } = validateInvoke(request);
    const slot = this.#table.beginInvocation(request.registrationId, request.invocationId);
    const registration = this.#table.get(request.registrationId);
    const logger = this.#logger.child({
      runUid: registration.runUid,
      attempt: registration.attempt,
      invocationId: request.invocationId,
    });
    try {
      const loaded = this.#loaded.get(request.registrationId);
      if (loaded === undefined) throw new KruntimesError('Internal', `registration ${request.registrationId} is ready but not loaded`);
      const started = this.#clock();
      const invoking = loaded.invoke({
        invocationId: request.invocationId,
        payload,
        timeoutMs,
        deadline: started + timeoutMs,
        logger,
      });
      const result = trace === undefined ? await invoking : await traceHandler(trace, registration, invoking);
      checkResult(result);
      logger.info({ durationMs: this.#clock() - started }, 'invocation succeeded');
      return result;
    } catch (error) {
      logger.info({ code: isKruntimesError(error) ? error.code : 'Internal', err: error }, 'invocation failed');
      throw error;
    } finally {
      this.#table.endInvocation(slot);
    }
  }

  /** How many registrations this server holds (loading, ready or failed and not yet released). */
  get registrations(): number {
    return this.#table.size;
  }

  /** Unloads every function (server shutdown). */
  async close(): Promise<void> {
    await Promise.all(this.#table.list().map((registration) => this.unregister(registration.id)));
  }

  async #load(registration: Registration, logger: Logger): Promise<void> {
    const id = registration.id;
    let sandbox: RunSandbox;
    try {
      sandbox = await this.#wall.open(registration.config.workdir, 'fn');
    } catch (error) {
      this.#table.abandon(id);
      throw error;
    }
    let loaded: LoadedFunction;
    try {
      loaded = await this.#adapter.register(
        {
          ...registration.config,
          workdir: sandbox.workdir,
          runUid: registration.runUid,
          attempt: registration.attempt,
          registrationId: id,
          sandbox,
        },
        {
          fatal: (error) => {
            logger.error({ code: error.code, err: error }, 'registration failed fatally');
            this.#table.markFailed(id, error.code, error.message);
            void this.#release(id);
          },
          restarted: () => {
            logger.warn('function process restarted');
            this.#table.noteRestart(id);
          },
        },
        logger,
      );
    } catch (error) {
      await sandbox.close();
      // Nothing served under this attempt: forget it so that the same attempt may retry.
      this.#table.abandon(id);
      logger.warn({ err: error }, 'registration failed to load');
      throw error;
    }
    loaded = withSandbox(loaded, sandbox);
    if (!this.#table.has(id)) {
      // Unregistered or superseded while loading.
      await loaded.close();
      throw new KruntimesError('RegistrationNotFound', `registration ${id} was released while it was loading`);
    }
    this.#loaded.set(id, loaded);
    this.#table.markReady(id);
    logger.info('registered');
  }

  async #release(registrationId: string): Promise<void> {
    const loaded = this.#loaded.get(registrationId);
    this.#loaded.delete(registrationId);
    await loaded?.close();
  }
}

/** The function, whose `close()` also takes its sandbox down once its processes are stopped. */
function withSandbox(loaded: LoadedFunction, sandbox: RunSandbox): LoadedFunction {
  return {
    invoke: (request) => loaded.invoke(request),
    close: async () => {
      await loaded.close();
      await sandbox.close();
    },
  };
}

function validateRegister(request: RegisterRequest): void {
  const problems: string[] = [];
  if (!isUid(request.runUid)) problems.push('run_uid must be a Kubernetes UID');
  if (!Number.isInteger(request.attempt) || request.attempt < 1) problems.push('attempt must be >= 1');
  if (!isAbsolute(request.workdir)) problems.push('workdir must be an absolute path');
  if (request.handler === '' || utf8ByteLength(request.handler) > BOUNDS.handlerBytes) {
    problems.push(`handler must be 1-${BOUNDS.handlerBytes} bytes`);
  }
  const env = Object.entries(request.env);
  if (env.length > BOUNDS.envCount) problems.push(`at most ${BOUNDS.envCount} env entries`);
  if (env.some(([, value]) => utf8ByteLength(value) > BOUNDS.envValueBytes)) {
    problems.push(`env values must be at most ${BOUNDS.envValueBytes} bytes`);
  }
  if (problems.length > 0) throw new KruntimesError('InvalidRequest', problems.join('; '));
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function validateInvoke(request: FunctionInvokeRequest): { payload: string; timeoutMs: number } {
  if (!isValidInvocationId(request.invocationId)) {
    throw new KruntimesError('InvalidInvocationId', 'invocation_id must be 1-128 bytes of visible ASCII');
  }
  if (request.payload.byteLength > BOUNDS.requestBodyBytes) {
    throw new KruntimesError('PayloadTooLarge', `payload is ${request.payload.byteLength} bytes, at most ${BOUNDS.requestBodyBytes}`);
  }
  const maxMs = BOUNDS.maxInvocationTimeoutSeconds * 1000;
  if (request.timeoutMs === undefined || request.timeoutMs <= 0 || request.timeoutMs > maxMs) {
    throw new KruntimesError('InvalidRequest', `timeout is required and must be in (0, ${maxMs}] ms`);
  }
  let payload: string;
  try {
    payload = request.payload.byteLength === 0 ? 'null' : decoder.decode(request.payload);
    JSON.parse(payload);
  } catch (error) {
    throw new KruntimesError('InvalidRequest', 'payload is not UTF-8 JSON', { cause: error });
  }
  return { payload, timeoutMs: request.timeoutMs };
}

/** The adapters bound what they read; this is the one place the bounds are decided. */
function checkResult(result: InvocationResult): void {
  const bytes = utf8ByteLength(result.result);
  if (bytes > BOUNDS.resultBytes) {
    throw new KruntimesError('FunctionOutputInvalid', `result is ${bytes} bytes, at most ${BOUNDS.resultBytes} allowed`);
  }
  const violations = validateOutputs(result.outputs);
  if (violations.length > 0) {
    throw new KruntimesError('FunctionOutputInvalid', `invalid outputs: ${violations.map((v) => `${v.field}: ${v.message}`).join('; ')}`);
  }
}

/** The handler's own span (its run time in the function process), under the invocation's server span. */
async function traceHandler(
  { tracer, span }: { tracer: Tracer; span: Span },
  registration: Registration,
  invoking: Promise<InvocationResult>,
): Promise<InvocationResult> {
  span.setAttributes({ [ATTR.runUid]: registration.runUid, [ATTR.attempt]: registration.attempt });
  const handler = startSpan(tracer, 'function handler', SpanKind.INTERNAL, parentOf(span), {
    [ATTR.runUid]: registration.runUid,
    [ATTR.attempt]: registration.attempt,
    'code.function.name': registration.config.handler,
  });
  try {
    const result = await invoking;
    handler.end();
    return result;
  } catch (error) {
    endFailed(handler, isKruntimesError(error) ? error.code : 'Internal', error instanceof Error ? error.message : String(error));
    throw error;
  }
}
