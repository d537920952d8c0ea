import { durationFromMillis, millisFromDuration } from './duration.ts';
import * as runtimeServerV1 from './generated/kruntimes/runtimeserver/v1/runtime_server.ts';
import * as runtimedV1 from './generated/kruntimes/runtimed/v1/function_runtime.ts';

const { ExecuteEvent, FunctionStatusResponse, LogStream, RegistrationState, RuntimeServerDefinition } = runtimeServerV1;

describe('generated code', () => {
  it('round-trips a message with a map, a Timestamp and an enum through protobufjs', () => {
    const lastActivity = new Date('2026-12-02T10:00:00.123Z');
    const encoded = FunctionStatusResponse.encode(
      FunctionStatusResponse.fromPartial({
        registrationId: 'r-1',
        state: RegistrationState.REGISTRATION_STATE_READY,
        lastActivity,
        invocations: 2 ** 40,
      }),
    ).finish();
    const decoded = FunctionStatusResponse.decode(encoded);
    expect(decoded.registrationId).toBe('r-1');
    expect(decoded.state).toBe(RegistrationState.REGISTRATION_STATE_READY);
    expect(decoded.lastActivity?.toISOString()).toBe(lastActivity.toISOString());
    expect(decoded.invocations).toBe(2 ** 40);
  });

  it('represents oneof as a tagged union', () => {
    const decoded = ExecuteEvent.decode(
      ExecuteEvent.encode({ event: { $case: 'log', log: { stream: LogStream.LOG_STREAM_STDERR, text: 'x', truncated: true } } }).finish(),
    );
    expect(decoded.event).toEqual({ $case: 'log', log: { stream: LogStream.LOG_STREAM_STDERR, text: 'x', truncated: true } });
  });

  it('defines the services with their full gRPC paths', () => {
    expect(RuntimeServerDefinition.fullName).toBe('kruntimes.runtimeserver.v1.RuntimeServer');
    expect(RuntimeServerDefinition.methods.execute.responseStream).toBe(true);
    expect(runtimedV1.FunctionRuntimeDefinition.fullName).toBe('kruntimes.runtimed.v1.FunctionRuntime');
    expect(runtimedV1.FunctionRuntimeDefinition.methods.invokeFunction.name).toBe('InvokeFunction');
  });

  it.each([
    [0, { seconds: 0, nanos: 0 }],
    [1500, { seconds: 1, nanos: 500_000_000 }],
    [-5, { seconds: 0, nanos: 0 }],
  ])('converts %d ms to a Duration and back', (millis, duration) => {
    expect(durationFromMillis(millis)).toEqual(duration);
    expect(millisFromDuration(duration)).toBe(Math.max(0, millis));
  });

  it('reads an unset Duration as undefined', () => {
    expect(millisFromDuration(undefined)).toBeUndefined();
  });
});
