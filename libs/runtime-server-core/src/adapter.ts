import type { KruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import type { FunctionConfig, RegistrationKey } from './registration-table.ts';
import type { RunSandbox } from './run-wall.ts';

/** Captured stdout or stderr of one invocation, bounded. */
export interface CapturedOutput {
  readonly data: string;
  readonly truncated: boolean;
  readonly totalBytes: number;
}

/** `workdir` is the sandbox's: the function's processes run there, as the sandbox's user. */
export interface FunctionSpec extends RegistrationKey, FunctionConfig {
  readonly registrationId: string;
  /** The registration's own directories and user, taken down after `close()`. */
  readonly sandbox: RunSandbox;
}

export interface InvocationRequest {
  readonly invocationId: string;
  /** UTF-8 JSON text, already checked to parse and to be within the request bound. */
  readonly payload: string;
  readonly timeoutMs: number;
  /** Absolute deadline, ms since the epoch (what the handler's context reports). */
  readonly deadline: number;
  readonly logger: Logger;
}

export interface InvocationResult {
  /** UTF-8 JSON text of the handler's return value. */
  readonly result: string;
  readonly outputs: Readonly<Record<string, string>>;
  readonly stdout: CapturedOutput;
  readonly stderr: CapturedOutput;
}

/** What a loaded function tells the core about its own life. */
export interface FunctionEvents {
  /**
   * The function can serve no more invocations (e.g. the Python worker died). The core
   * marks the registration failed with this cause; recovery is a higher attempt.
   */
  fatal(error: KruntimesError): void;
  /** The function process was replaced after a timeout; the registration lives on. */
  restarted(): void;
}

/** One registered function, loaded and ready to invoke. */
export interface LoadedFunction {
  /**
   * Runs one invocation (the core guarantees one at a time). Rejects with a
   * KruntimesError: FunctionFailed (handler raised / exited non-zero),
   * FunctionOutputInvalid, InvocationTimeout (the adapter has killed it by then),
   * RegistrationLost (the function process died).
   */
  invoke(request: InvocationRequest): Promise<InvocationResult>;
  /** Stops the function for good and frees its processes; an invocation in flight fails. */
  close(): Promise<void>;
}

export interface TaskCommand {
  readonly command: string;
  readonly args: readonly string[];
  /** Variables the language needs on top of the task's own (e.g. PYTHONUNBUFFERED). */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * What a language contributes to a Runtime Server. Everything else (the registration
 * table, invocation slots and bounds, task processes, log streaming, cancel, gRPC) is
 * shared in this lib.
 */
export interface LanguageAdapter {
  readonly language: 'python' | 'bash';
  /** A command that runs the language's interpreter and exits 0: walled, the Runs' users must be able to. */
  readonly probe?: readonly string[];
  /**
   * Cheap synchronous checks of a registration request before anything is recorded
   * (handler syntax); throws KruntimesError InvalidRequest.
   */
  prepare(config: FunctionConfig): void;
  /**
   * Loads the function (Python: starts the warm worker and imports the module once).
   * Rejects with FunctionFailed when user code cannot be loaded.
   */
  register(spec: FunctionSpec, events: FunctionEvents, logger: Logger): Promise<LoadedFunction>;
  /**
   * How to run a task's entry point (an absolute path inside the workdir); `env` is the
   * task's own environment (a language may extend a search path found there).
   */
  taskCommand(entrypoint: string, args: readonly string[], env: Readonly<Record<string, string>>): TaskCommand;
}
