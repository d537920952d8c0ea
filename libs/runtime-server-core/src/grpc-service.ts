import { millisFromDuration, runtimeServerV1 } from '@kruntimes/proto';
import type { CallContext } from 'nice-grpc';
import type { CapturedOutput, InvocationResult } from './adapter.ts';
import type { ExecutionEnding, ExecutionStatus } from './execution-record.ts';
import type { ExecuteRequest, ExecutionEvent, ExecutionService, ExitReason } from './execution-service.ts';
import type { FunctionService } from './function-service.ts';
import type { Registration, RegistrationState } from './registration-table.ts';

type Impl = runtimeServerV1.RuntimeServerServiceImplementation;
const { ExecutionState, ExitReason: ProtoExitReason, LogStream, RegistrationState: ProtoState } = runtimeServerV1;

const STATES: Record<RegistrationState, runtimeServerV1.RegistrationState> = {
  starting: ProtoState.REGISTRATION_STATE_STARTING,
  ready: ProtoState.REGISTRATION_STATE_READY,
  failed: ProtoState.REGISTRATION_STATE_FAILED,
};

const EXIT_REASONS: Record<ExitReason, runtimeServerV1.ExitReason> = {
  completed: ProtoExitReason.EXIT_REASON_COMPLETED,
  cancelled: ProtoExitReason.EXIT_REASON_CANCELLED,
  timed_out: ProtoExitReason.EXIT_REASON_TIMED_OUT,
  start_failed: ProtoExitReason.EXIT_REASON_START_FAILED,
  waiting_input: ProtoExitReason.EXIT_REASON_WAITING_INPUT,
};

/** The RuntimeServer gRPC service: translation between proto messages and the core. */
export function runtimeServerService(functions: FunctionService, executions: ExecutionService): Impl {
  return {
    async registerFunction(request) {
      return functions.register({
        runUid: request.runUid,
        attempt: request.attempt,
        workdir: request.workdir,
        handler: request.handler,
        env: request.env,
      });
    },

    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    async functionStatus(request) {
      return toStatusResponse(functions.status(request.registrationId));
    },

    async invokeFunction(request, context: CallContext) {
      const result = await functions.invoke({
        registrationId: request.registrationId,
        invocationId: request.invocationId,
        payload: request.payload,
        timeoutMs: millisFromDuration(request.timeout),
        traceparent: context.metadata.get('traceparent'),
        tracestate: context.metadata.get('tracestate'),
      });
      return toInvokeResponse(request.invocationId, result);
    },

    async unregisterFunction(request) {
      return { found: await functions.unregister(request.registrationId) };
    },

    async *execute(request, context: CallContext) {
      const events = executions.execute(toExecuteRequest(request), context.signal);
      for await (const event of events) yield toProtoEvent(event);
    },

    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    async cancelExecution(request) {
      return { found: executions.cancel(request.executionId, millisFromDuration(request.gracePeriod)) };
    },

    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    async getExecution(request) {
      return toExecutionResponse(executions.status(request.runUid, request.attempt));
    },
  };
}

function toExecutionResponse(status: ExecutionStatus): runtimeServerV1.GetExecutionResponse {
  switch (status.state) {
    case 'unknown':
      return { state: ExecutionState.EXECUTION_STATE_UNKNOWN, executionId: '', started: undefined, exited: undefined };
    case 'running':
      return {
        state: ExecutionState.EXECUTION_STATE_RUNNING,
        executionId: status.executionId,
        started: { pid: status.pid, time: new Date(status.startedAt) },
        exited: undefined,
      };
    case 'exited':
      return {
        state: ExecutionState.EXECUTION_STATE_EXITED,
        executionId: status.executionId,
        started: status.started === undefined ? undefined : { pid: status.started.pid, time: new Date(status.started.startedAt) },
        exited: toProtoExited(status.ending),
      };
  }
}

function toProtoExited(ending: ExecutionEnding): runtimeServerV1.ExecutionExited {
  return {
    reason: EXIT_REASONS[ending.reason],
    exitCode: ending.exitCode,
    signal: ending.signal,
    outputs: ending.outputs,
    outputsError: ending.outputsError,
    message: ending.message,
    manifest: ending.manifest.map((entry) => ({
      artifactId: entry.artifactId,
      sha256: entry.sha256,
      size: entry.size,
      mediaType: entry.mediaType,
    })),
    time: new Date(ending.time),
  };
}

function toStatusResponse(status: Registration): runtimeServerV1.FunctionStatusResponse {
  return {
    registrationId: status.id,
    runUid: status.runUid,
    attempt: status.attempt,
    state: STATES[status.state],
    fatalError:
      status.fatalError === undefined
        ? undefined
        : { code: status.fatalError.code, message: status.fatalError.message, time: new Date(status.fatalError.at) },
    inFlight: status.inFlight === undefined ? 0 : 1,
    lastActivity: new Date(status.lastActivity),
    registeredAt: new Date(status.registeredAt),
    invocations: status.invocations,
    restarts: status.restarts,
  };
}

function toInvokeResponse(invocationId: string, result: InvocationResult): runtimeServerV1.InvokeFunctionResponse {
  return {
    invocationId,
    result: Buffer.from(result.result, 'utf8'),
    outputs: result.outputs,
    stdout: captured(result.stdout),
    stderr: captured(result.stderr),
  };
}

function toExecuteRequest(request: runtimeServerV1.ExecuteRequest): ExecuteRequest {
  return {
    executionId: request.executionId,
    runUid: request.runUid,
    attempt: request.attempt,
    workdir: request.workdir,
    entrypoint: request.entrypoint,
    args: request.args,
    env: request.env,
    timeoutMs: millisFromDuration(request.timeout),
    graceMs: millisFromDuration(request.gracePeriod),
    artifacts:
      request.artifacts === undefined
        ? undefined
        : {
            grantAddress: request.artifacts.grantAddress,
            grantToken: request.artifacts.grantToken,
            declared: request.artifacts.declared.map((d) => ({
              id: d.artifactId,
              maxBytes: d.maxBytes,
              mediaType: d.mediaType,
              optional: d.optional,
            })),
          },
    resume:
      request.resume === undefined
        ? undefined
        : {
            checkpoint: request.resume.checkpoint,
            checkpointAttempt: request.resume.checkpointAttempt,
            inputJson: request.resume.inputJson,
            responseId: request.resume.responseId,
          },
  };
}

function captured(output: CapturedOutput): runtimeServerV1.CapturedStream {
  return { data: output.data, truncated: output.truncated, totalBytes: output.totalBytes };
}

function toProtoEvent(event: ExecutionEvent): runtimeServerV1.ExecuteEvent {
  switch (event.kind) {
    case 'started':
      return { event: { $case: 'started', started: { pid: event.pid, time: new Date(event.time) } } };
    case 'log':
      return {
        event: {
          $case: 'log',
          log: {
            stream: event.stream === 'stdout' ? LogStream.LOG_STREAM_STDOUT : LogStream.LOG_STREAM_STDERR,
            text: event.text,
            truncated: event.truncated,
            time: new Date(event.time),
          },
        },
      };
    case 'exited':
      return {
        event: { $case: 'exited', exited: toProtoExited(event) },
      };
  }
}
