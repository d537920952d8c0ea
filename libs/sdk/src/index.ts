// The SDK is the users' API: its option, result and error types stay exported with it.
export { InvocationError, InvocationTransportError } from './errors.ts';
export type { TransportFailureKind } from './errors.ts';
export { INVOKE_DEFAULT_TIMEOUT_MS, invokeFunction, prepareInvocation } from './invoke.ts';
export type { InvocationResult, InvokeOptions } from './invoke.ts';
export { Sandbox } from './sandbox.ts';
export { nextChange } from './watch-change.ts';
export type {
  ExecOptions,
  ExecResult,
  FileEntry,
  ListFilesResult,
  ReadFileResult,
  SandboxOptions,
  SandboxWarning,
  ToolCallOptions,
  WriteFileResult,
} from './sandbox.ts';
export {
  SANDBOX_DEFAULT_IDLE_TIMEOUT_SECONDS,
  SANDBOX_HANDLER,
  SANDBOX_SOURCE,
  SandboxError,
  SandboxToolError,
  decideRuntimeCheck,
  sandboxState,
  toolError,
} from './sandbox-decisions.ts';
export type { RuntimeCheck, SandboxErrorCode, SandboxState, SandboxToolErrorKind } from './sandbox-decisions.ts';
