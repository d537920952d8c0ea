import type { ArtifactRecord, RunArtifacts } from './artifacts.ts';
import type { RunOrigin } from './origin.ts';
import type { ResponseRecord, ResumeStatus, RuntimeCapability, WaitingInputStatus } from './input.ts';
import type { Condition, ObjectMeta } from './meta.ts';
import type { EndpointProtocol, RunPhase, RuntimeLanguage } from './phases.ts';

// The object metadata and conditions live in meta.ts, which the other API files import without a loop.
export type { Condition, ObjectMeta, OwnerReference, ReadonlyDeep } from './meta.ts';

/**
 * An RBAC rule as each component declares what it needs (its `*_RULES`), from which the
 * chart's Roles are generated and the tests grant exactly that.
 */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

// ---------------------------------------------------------------------------- Runtime

export interface RuntimeSpec {
  language: RuntimeLanguage;
  /** Image of the Runtime Server container; defaults to the chart's image for the language. */
  image?: string;
  /**
   * Number of Runtime Pods. With `scaling` set the controller-manager's autoscaler owns it
   * (a user's `kubectl scale` is put back at once, with a Warning Event ScaleOverridden);
   * without it a person, HPA or KEDA sets it through the `/scale` subresource.
   */
  replicas?: number;
  /** Size the pool from demand (docs/operations.md "Elastic pools"); absent: `replicas` rules. */
  scaling?: RuntimeScaling;
  /**
   * How long a Runtime Pod told to stop (rollout, scale-down, eviction, node drain) lets its
   * running tasks finish before it stops them (they end Interrupted, reason DrainWindowExceeded).
   * Sets the Pod's terminationGracePeriodSeconds (this plus the cancel grace and a margin).
   */
  drainSeconds?: number;
  /** Run capacity of one Runtime Pod (task executions plus registered functions). */
  runs?: number;
  ports?: RuntimePorts;
  resources?: ResourceRequirements;
  serviceAccountName?: string;
  /**
   * What the Runtime Server image supports beyond plain tasks and functions:
   * `checkpoint-v1` lets a task wait for input (docs/waiting-input.md).
   */
  capabilities?: RuntimeCapability[];
  /**
   * While true the scheduler binds no new Run of this Runtime (they wait `Pending` with
   * reason `RuntimeSuspended`); Runs already bound are not touched. The block policy.
   */
  suspend?: boolean;
}

export interface RuntimeScaling {
  /** Fewest Pods (0: scale to zero when nothing is held or waiting). Default 1. */
  minReplicas?: number;
  maxReplicas: number;
  /** Free run slots kept ready beyond demand so that a new Run binds at once (the warm pool). Default 0. */
  spareRuns?: number;
  /** How long demand must stay lower before Pods are removed. Default 300. */
  scaleDownDelaySeconds?: number;
}

export interface RuntimePorts {
  grpc?: number;
  peer?: number;
}

export interface ResourceRequirements {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

export interface RuntimeStatus {
  observedGeneration?: number;
  replicas?: number;
  readyPods?: number;
  totalCapacity?: number;
  usedCapacity?: number;
  /** The autoscaler's decision (equals spec.replicas once written); absent without spec.scaling. */
  desiredReplicas?: number;
  /** Runs of this Runtime waiting Pending for a slot (the demand not yet bound). */
  pendingRuns?: number;
  /** The label selector of the Runtime's Pods, for the `/scale` subresource (HPA, KEDA). */
  selector?: string;
  /** How the Runs sharing one of its Pods are kept apart (condition RunsIsolated says why). */
  runIsolation?: RuntimeRunIsolation;
  conditions?: Condition[];
}

/** PerRunUser: each Run its own uid in the Pod's user namespace. SharedUser: Runs on one Pod trust each other. */
export const RUNTIME_RUN_ISOLATIONS = ['PerRunUser', 'SharedUser'] as const;
export type RuntimeRunIsolation = (typeof RUNTIME_RUN_ISOLATIONS)[number];

export interface Runtime {
  apiVersion: 'kruntimes.io/v1alpha1';
  kind: 'Runtime';
  metadata: ObjectMeta;
  spec: RuntimeSpec;
  status?: RuntimeStatus;
}

// ---------------------------------------------------------------------------- Run

export interface ConfigMapKeyReference {
  name: string;
  key: string;
}

/** Exactly one of `inline` and `configMapKeyRef`. */
export interface RunSource {
  inline?: string;
  configMapKeyRef?: ConfigMapKeyReference;
  /**
   * The sha256 the source must have (`sha256:<64 hex>`): the snapshot is refused otherwise.
   * `krt retry` sets it, with configMapKeyRef naming the parent's snapshot ConfigMap, so that
   * the retry runs the very program its parent ran.
   */
  digest?: string;
}

/**
 * `status.source`: the execution snapshot, resolved once before the first binding and
 * immutable afterwards. Every attempt runs exactly these bytes (runtimed checks the digest).
 */
export interface SourceSnapshot {
  /** sha256 of the UTF-8 source, `sha256:<64 hex>`. */
  digest: string;
  /** Bytes of the UTF-8 source. */
  size: number;
  /**
   * The immutable ConfigMap holding the copy (key SOURCE_SNAPSHOT.key) of a
   * configMapKeyRef source; absent for an inline source, which is its own snapshot.
   */
  configMapName?: string;
}

export interface TaskMode {
  /** Arguments passed to the program. */
  args?: string[];
}

export interface FunctionMode {
  /** Python: `module:function` or `function` in the source; Bash: a shell function name. */
  handler: string;
  idleTimeoutSeconds?: number;
  invocationTimeoutSeconds?: number;
}

/** Exactly one of `task` and `function`. */
export interface RunMode {
  task?: TaskMode;
  function?: FunctionMode;
}

export interface EnvVar {
  name: string;
  value: string;
}

export interface RetryPolicy {
  /** Attempts in all, counting the first (default 3; 1, and at most 1, for a task that is not retrySafe). */
  maxAttempts?: number;
  initialBackoffSeconds?: number;
  maxBackoffSeconds?: number;
  /**
   * The task may be run again after its owner was lost without proof of what it did.
   * Function registration is always safe to retry and ignores this field.
   */
  retrySafe?: boolean;
}

export interface RunReference {
  name: string;
  uid: string;
}

export interface RunSpec {
  runtime: string;
  source: RunSource;
  mode: RunMode;
  env?: EnvVar[];
  /**
   * Maximum lifetime from `status.startTime` as a duration (`90s`, `10m`, `1h30m`):
   * a task's execution time, a function's reservation lifetime.
   */
  timeout?: string;
  retryPolicy?: RetryPolicy;
  /** May only change from false to true. */
  cancelRequested?: boolean;
  ttlSecondsAfterFinished?: number;
  /** Set on a retry of a finished Run. */
  parentRunRef?: RunReference;
  /** Task Runs only: the files the task uploads, and the store they go to. */
  artifacts?: RunArtifacts;
  /** Executed elsewhere (`krt run --local`), result recorded by `krt sync`: never scheduled. Immutable. */
  origin?: RunOrigin;
  /**
   * Who created the Run, stamped at create by the MutatingAdmissionPolicy
   * `kruntimes.io-run-creator` from the request's user (whatever the client sent);
   * immutable. The scheduler asks again at assignment whether this user may `use` the
   * Runtime. Absent on a Run created without the policy installed.
   */
  creator?: RunCreator;
}

export interface RunCreator {
  username: string;
  groups?: string[];
}

export interface RunEndpoint {
  protocol: EndpointProtocol;
  url: string;
  /** base64 of a PEM trust bundle (a `[]byte` field in Kubernetes terms). */
  caBundle?: string;
}

export interface RunStatus {
  observedGeneration?: number;
  phase?: RunPhase;
  /** Copied from spec on every status write so that `kubectl get runs` can print it. */
  mode?: RunModeKind;
  conditions?: Condition[];
  /** Attempt number, counting from 1; never decreases. */
  attempt?: number;
  /** Set and cleared together with assignedPodUID. */
  assignedPod?: string;
  assignedPodUID?: string;
  endpoint?: RunEndpoint;
  startTime?: string;
  completionTime?: string;
  /** The scheduler does not bind this attempt before this time (retry backoff). */
  notBefore?: string;
  /**
   * Attempts that ended because their Pod was told to stop (a drain: rollout, scale-down,
   * eviction) and handed the Run over: a planned move, not counted against maxAttempts.
   */
  plannedMoves?: number;
  reason?: string;
  message?: string;
  exitCode?: number;
  outputs?: Record<string, string>;
  /** The artifacts of the succeeded attempt, verified in the store before the Run became Succeeded. */
  artifacts?: ArtifactRecord[];
  /**
   * The place of the last report of the current attempt among its owner's reports
   * (runtimed numbers them 1, 2, ...): a report whose number is not higher is older than
   * what is recorded and is refused. Cleared when a new attempt starts.
   */
  reportSequence?: number;
  /** Set while the Run is WaitingInput: the schema a response must satisfy and the stored checkpoint. */
  waitingInput?: WaitingInputStatus;
  /** What the current continuation attempt starts from (the checkpoint and the accepted response). */
  resume?: ResumeStatus;
  /** The latest accepted responses (BOUNDS.responsesKept), so that a repeated response ID continues nothing. */
  responses?: ResponseRecord[];
  /** The execution snapshot of spec.source (docs/lifecycle.md "Source snapshot"); set once, never changed. */
  source?: SourceSnapshot;
}

export interface Run {
  apiVersion: 'kruntimes.io/v1alpha1';
  kind: 'Run';
  metadata: ObjectMeta;
  spec: RunSpec;
  status?: RunStatus;
}

/** The mode of a Run, derived from which member of `spec.mode` is set. */
export type RunModeKind = 'task' | 'function';

export function runModeKind(spec: Pick<RunSpec, 'mode'>): RunModeKind {
  return spec.mode.function === undefined ? 'task' : 'function';
}
