// Size and time limits, and defaults.
export { BOUNDS, DEFAULTS } from './bounds.ts';
export { INVOCATION_DEADLINE_MARGINS_MS, INVOCATION_HOPS, invocationDeadlineMs } from './deadlines.ts';
export type { InvocationHop } from './deadlines.ts';

// API group, kinds, labels, annotations, reasons and RBAC rules.
export {
  ADMISSION_POLICY_NAMES,
  API_GROUP,
  API_GROUP_VERSION,
  API_VERSION,
  CONDITION_TYPES,
  CRD_CATEGORIES,
  EVENT_REASONS,
  INVOCATION_ID_HEADER,
  LABELS,
  LEASE_ANNOTATIONS,
  NAMESPACE_AUTOMATIC_RETRY_ANNOTATION,
  NAMESPACE_BLOCKED_LABEL,
  NAMESPACE_RUN_SLOTS_ANNOTATION,
  PART_OF,
  POD_ANNOTATIONS,
  REGISTRATION_CLEANUP_FINALIZER,
  RUNTIMED_TLS_MOUNT_PATH,
  RUNTIME_KIND,
  RUNTIME_PLURAL,
  RUNTIME_REASONS,
  RUNTIME_SHORT_NAMES,
  RUNTIME_SINGULAR,
  RUNTIME_USER_RULES,
  RUNTIME_USE_VERB,
  RUN_KIND,
  RUN_PLURAL,
  RUN_REASONS,
  RUN_RUNTIME_FIELD,
  RUN_SHORT_NAMES,
  RUN_SINGULAR,
  SOURCE_SNAPSHOT,
  runtimedTlsSecretName,
  snapshotConfigMapName,
} from './constants.ts';
export type { ConditionStatus, RunReason } from './constants.ts';

// Run phases, runtime languages and endpoint protocols.
export { ENDPOINT_PROTOCOLS, RUNTIME_LANGUAGES, RUN_PHASES } from './phases.ts';
export type { RunPhase, RuntimeLanguage } from './phases.ts';

// The Run and Runtime resources.
export { RUNTIME_RUN_ISOLATIONS, runModeKind } from './types.ts';
export type {
  Condition,
  EnvVar,
  FunctionMode,
  ObjectMeta,
  ReadonlyDeep,
  OwnerReference,
  PolicyRule,
  ResourceRequirements,
  RetryPolicy,
  Run,
  RunEndpoint,
  RunModeKind,
  RunSpec,
  RunStatus,
  Runtime,
  RuntimeScaling,
  RuntimeSpec,
  RuntimeStatus,
  RuntimeRunIsolation,
  SourceSnapshot,
} from './types.ts';

// Validation shared by the API, the CRDs and the components.
export {
  DNS1123_LABEL_PATTERN,
  DNS1123_SUBDOMAIN_PATTERN,
  DURATION_PATTERN,
  OUTPUT_KEY_PATTERN,
  boundedMessage,
  isDns1123Label,
  isDns1123Subdomain,
  isUid,
  isValidInvocationId,
  parseDurationSeconds,
  truncateUtf8,
  utf8ByteLength,
  validateOutputs,
} from './validation.ts';

// RunSchedule.
export {
  OVERLAP_POLICIES,
  RUN_SCHEDULE_KIND,
  RUN_SCHEDULE_PLURAL,
  RUN_SCHEDULE_SHORT_NAMES,
  RUN_SCHEDULE_SINGULAR,
  SCHEDULE_ANNOTATIONS,
  SCHEDULE_BOUNDS,
  SCHEDULE_CONDITION_TYPES,
  SCHEDULE_DEFAULTS,
  SCHEDULE_REASONS,
  SCHEDULE_SHAPE_PATTERN,
  TIME_ZONE_PATTERN,
} from './schedule.ts';
export type { OverlapPolicy, RunSchedule, RunScheduleSpec, RunScheduleStatus, ScheduleReason } from './schedule.ts';

// Artifacts and ArtifactStore.
export {
  ARTIFACT_DIGEST_PATTERN,
  ARTIFACT_ID_PATTERN,
  ARTIFACT_STORE_CONDITION_TYPES,
  ARTIFACT_STORE_KIND,
  ARTIFACT_STORE_PLURAL,
  ARTIFACT_STORE_REASONS,
  ARTIFACT_STORE_SECRET_KEYS,
  ARTIFACT_STORE_SHORT_NAMES,
  ARTIFACT_STORE_SINGULAR,
  MEDIA_TYPE_PATTERN,
  artifactNamespacePrefix,
  artifactObjectKey,
  artifactRunPrefix,
  isArtifactId,
  isSha256Hex,
  parseArtifactObjectKey,
} from './artifacts.ts';
export type {
  ArtifactRecord,
  ArtifactStore,
  ArtifactStoreReason,
  ArtifactStoreSpec,
  ArtifactStoreStatus,
  DeclaredArtifact,
  RunArtifacts,
} from './artifacts.ts';

// Runs started locally (krt run --local).
export { LOCAL_RESULT_PHASES, LOCAL_RUN_ID_PATTERN, ORIGIN_LABEL, isLocalRunId } from './origin.ts';
export type { LocalResultPhase, LocalRunResult, RunOrigin } from './origin.ts';

// RunInput, checkpoints and runtime capabilities.
export {
  CHECKPOINT_ARTIFACT_ID,
  CHECKPOINT_CAPABILITY,
  CHECKPOINT_MEDIA_TYPE,
  RESERVED_ARTIFACT_ID_PREFIX,
  RESPONSE_ID_PATTERN,
  RUNTIME_CAPABILITIES,
  RUN_INPUT_CONDITION_TYPES,
  RUN_INPUT_KIND,
  RUN_INPUT_PLURAL,
  RUN_INPUT_REASONS,
  RUN_INPUT_SHORT_NAMES,
  RUN_INPUT_SINGULAR,
  isResponseId,
} from './input.ts';
export type { ResumeStatus, RunInput, RunInputReason, RunInputStatus, RuntimeCapability } from './input.ts';

// Reading a Run's logs from runtimed's log lines.
export { RUNTIMED_LOG_MESSAGES, attemptsWithoutLogs, parseJsonObject, parseRuntimedLogLine, selectRunLogs } from './run-logs.ts';
export type { RunLogRecord, RunLogSelection } from './run-logs.ts';
