export { checkInput, compileInputSchema, describeViolations } from './input-schema.ts';
export type { InputCheck, SchemaCheck } from './input-schema.ts';
export { decideRunInput, decideWaitingRun, isDecided, runInputName } from './run-input-decision.ts';
export type { RunInputDecision, WaitingRunDecision } from './run-input-decision.ts';
