// Exactly what other projects use; everything else stays inside the lib.
export {
  TERMINAL_PHASES,
  acceptsInvokes,
  classify,
  countByPhase,
  finishKind,
  hasOwner,
  holdsCapacity,
  isActive,
  isSuccessful,
  isTerminal,
  isWaitingForInput,
  mayBeCollected,
  mayTurnReady,
  phaseMetricLabel,
  waitOutcome,
} from './classification.ts';
export type { FinishKind, WaitTarget } from './classification.ts';
export { capacityHold } from './capacity.ts';
export type { CapacityHolder } from './capacity.ts';
export { findCondition, isConditionTrue, setCondition } from './conditions.ts';
export { AUTOMATIC_RETRY_ALLOWED, decideRetry, resolveAutomaticRetryPolicy, resolveRetryPolicy, retryBudgetStart } from './retry.ts';
export type { AutomaticRetryPolicy } from './retry.ts';
export { TransitionRefusedError, currentPhase, transition } from './transition.ts';
export type { RunEvent, TransitionResult, WriterRole } from './transition.ts';
export type {
  AdmissionRefusalReason,
  ClaimRefusalReason,
  InterruptReason,
  SourceProblemReason,
  UnschedulableReason,
} from './transition/events.ts';
export { decideLostExecutionReason } from './lost-execution.ts';
export { isExecutedElsewhere } from './origin.ts';
export { checkManifest, summarizeProblems } from './artifact-manifest.ts';
export type { ArtifactFailureReason, ArtifactProblem, ExpectedArtifact, ManifestEntryInput } from './artifact-manifest.ts';
export { decideGrant, grantLifetime } from './artifact-grant-decision.ts';
export type { GrantInput, GrantRequest } from './artifact-grant-decision.ts';
export { entrypointFile, runEnv } from './execution-env.ts';
