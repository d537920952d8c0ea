// The runtime-server entry point, for the language servers (runtime-server-bash, -python).
export { runRuntimeServerMain } from './server.ts';
export type { FunctionConfig } from './registration-table.ts';

// The contract a language adapter implements.
export type {
  CapturedOutput,
  FunctionEvents,
  FunctionSpec,
  InvocationRequest,
  InvocationResult,
  LanguageAdapter,
  LoadedFunction,
  TaskCommand,
} from './adapter.ts';

// Process and stream helpers for the adapters' function processes.
export { BoundedCapture } from './bounded-capture.ts';
export { LineSplitter } from './line-splitter.ts';
export { baseEnv } from './process-env.ts';
export { killGroup, signalGroup } from './process-group.ts';
export { guard } from './group-watch.ts';
export type { Guard } from './group-watch.ts';
export { openRunFile } from './run-files.ts';
export { sandboxCommand, withPrologue } from './task-process.ts';

// Each Run its own user and directories (KRT_RUN_UIDS).
export { RunWall, killAllOf } from './run-wall.ts';
export type { RunIdentity, RunSandbox } from './run-wall.ts';

// gRPC server pieces runtimed and local runs reuse.
export { checkListenAddress } from './listen-address.ts';
export { errorMiddleware } from './grpc-errors.ts';
