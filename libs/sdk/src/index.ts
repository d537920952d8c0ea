export * from './errors.ts';
export { INVOKE_DEFAULT_TIMEOUT_MS, invokeFunction, prepareInvocation } from './invoke.ts';
export type { InvocationResult, InvokeOptions } from './invoke.ts';
