import { CONDITION_TYPES, DEFAULTS, REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { acceptsInvokes, currentPhase, isConditionTrue, isTerminal } from '@kruntimes/run-state';
import { InvocationError } from './errors.ts';

/** The stock sandbox handler of the Python Runtime Server, and the source a Run needs to use it. */
export const SANDBOX_HANDLER = 'kruntimes_sandbox:handle';
export const SANDBOX_SOURCE = 'from kruntimes_sandbox import handle\n';
export const SANDBOX_GENERATE_NAME = 'sandbox-';
/** A sandbox whose agent died ends by itself after this long without a tool call. */
export const SANDBOX_DEFAULT_IDLE_TIMEOUT_SECONDS = 600;

/**
 * Why a session refuses (or warns about) a Runtime: an agent sandbox owns its Pod only
 * on a Runtime with `runs: 1`; on any other the sandboxes share Pods (and the machine),
 * and the session never changes scheduling to pretend otherwise.
 */
export type RuntimeCheck =
  | { kind: 'exclusive' }
  | { kind: 'warn'; message: string }
  | { kind: 'refuse'; code: 'RuntimeNotExclusive' | 'RuntimeNotFound' | 'RuntimeUnreadable'; message: string };

/**
 * What to do with the Runtime as read before creating a sandbox: `runtime` undefined when
 * it does not exist (404), `readError` set when it could not be read (no `get` right, an
 * unreachable API): without exclusive the session goes on with a warning, with it refuses.
 */
export function decideRuntimeCheck(input: {
  name: string;
  runtime: Runtime | undefined;
  readError?: string | undefined;
  exclusive: boolean;
}): RuntimeCheck {
  const { name, runtime, readError, exclusive } = input;
  if (readError !== undefined) {
    const message = `cannot read Runtime "${name}" to check its runs (${readError})`;
    return exclusive ? { kind: 'refuse', code: 'RuntimeUnreadable', message } : { kind: 'warn', message: `${message}; not checked` };
  }
  if (runtime === undefined) return { kind: 'refuse', code: 'RuntimeNotFound', message: `Runtime "${name}" not found` };
  const runs = runtime.spec.runs ?? DEFAULTS.runsPerPod;
  if (runs === 1) return { kind: 'exclusive' };
  const message = `Runtime "${name}" has runs: ${runs}, so sandboxes share its Pods; an exclusive sandbox needs a Runtime with runs: 1`;
  return exclusive ? { kind: 'refuse', code: 'RuntimeNotExclusive', message } : { kind: 'warn', message };
}

/** Where a created sandbox Run is while the session waits for it. */
export type SandboxState = { kind: 'ready' } | { kind: 'waiting'; phase: string } | { kind: 'ended'; message: string };

/** Ready: a Ready phase with a True Ready condition, not being deleted, with an endpoint to call. */
export function sandboxState(run: Run): SandboxState {
  const phase = currentPhase(run);
  if (isTerminal(phase)) {
    const reason =
      run.status?.reason === undefined ? '' : ` (${run.status.reason}${run.status.message === undefined ? '' : `: ${run.status.message}`})`;
    return { kind: 'ended', message: `sandbox Run "${run.metadata.name ?? ''}" ended ${phase}${reason}` };
  }
  if (run.metadata.deletionTimestamp !== undefined)
    return { kind: 'ended', message: `sandbox Run "${run.metadata.name ?? ''}" is being deleted` };
  const ready = acceptsInvokes(phase, isConditionTrue(run.status?.conditions, CONDITION_TYPES.ready), false);
  // A Ready Run always has its endpoint; without one there is nothing to call yet.
  if (ready && run.status?.endpoint !== undefined) return { kind: 'ready' };
  return { kind: 'waiting', phase };
}

/** After cancel(): the Run ended and its Pod-local registration (the workspace) is released. */
export function cancelFinished(run: Run): boolean {
  return isTerminal(currentPhase(run)) && run.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) !== true;
}

/** What a tool refused or failed with (the handler's `SandboxError` kinds). */
export type SandboxToolErrorKind = 'PathOutsideWorkspace' | 'InvalidToolCall' | 'ExecTimeout';

const TOOL_ERROR_LINE = /^kruntimes_sandbox\.SandboxError: (PathOutsideWorkspace|InvalidToolCall|ExecTimeout): /m;

/**
 * A tool call the sandbox handler refused or failed: the gateway's FunctionFailed (code,
 * source `function`, invocation ID as InvocationError) with the handler's kind.
 */
export class SandboxToolError extends InvocationError {
  readonly kind: SandboxToolErrorKind;

  constructor(error: InvocationError, kind: SandboxToolErrorKind) {
    super({
      code: error.code,
      message: error.message,
      invocationId: error.invocationId,
      source: error.source,
      ...(error.httpStatus === undefined ? {} : { httpStatus: error.httpStatus }),
    });
    this.name = 'SandboxToolError';
    this.kind = kind;
  }
}

/** The SandboxToolError of a FunctionFailed answer that the handler raised; the error itself otherwise. */
export function toolError(error: unknown): unknown {
  if (!(error instanceof InvocationError) || error.code !== 'FunctionFailed') return error;
  const kind = TOOL_ERROR_LINE.exec(error.message)?.[1] as SandboxToolErrorKind | undefined;
  return kind === undefined ? error : new SandboxToolError(error, kind);
}

/** Session errors the SDK raises itself (none of them crosses the wire, so they are not platform error codes). */
export type SandboxErrorCode =
  | 'RuntimeNotExclusive'
  | 'RuntimeNotFound'
  | 'RuntimeUnreadable'
  | 'SandboxEnded'
  | 'ReadyTimeout'
  | 'EndTimeout'
  | 'NotStarted'
  | 'Closed';

export class SandboxError extends Error {
  readonly code: SandboxErrorCode;
  /** The sandbox Run, once created. */
  readonly runName: string | undefined;

  constructor(code: SandboxErrorCode, message: string, runName?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SandboxError';
    this.code = code;
    this.runName = runName;
  }
}
