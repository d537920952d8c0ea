/** API group, version and resource names of kruntimes.io. */
export const API_GROUP = 'kruntimes.io';
export const API_VERSION = 'v1alpha1';
export const API_GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;

export const RUN_KIND = 'Run';
export const RUN_PLURAL = 'runs';
export const RUN_SINGULAR = 'run';
export const RUN_SHORT_NAMES = ['krun'] as const;

export const RUNTIME_KIND = 'Runtime';
export const RUNTIME_PLURAL = 'runtimes';
export const RUNTIME_SINGULAR = 'runtime';
export const RUNTIME_SHORT_NAMES = ['krtm'] as const;

/** `kubectl get kruntimes` lists Runtimes and Runs together. */
export const CRD_CATEGORIES = ['kruntimes'] as const;

/**
 * Held by a long-lived (function) Run while Pod-local Runtime Server state exists for
 * it, so that deleting the Run object cannot leave a registration serving.
 */
export const REGISTRATION_CLEANUP_FINALIZER = 'kruntimes.io/registration-cleanup';

/**
 * The Run field a list or watch selects a Runtime's Runs by (`fieldSelector=spec.runtime=NAME`),
 * declared as a selectable field of the Run CRD (Kubernetes 1.31+).
 */
export const RUN_RUNTIME_FIELD = 'spec.runtime';

/** Labels set by kruntimes on the objects it creates. */
export const LABELS = {
  /** Name of the Runtime a Pod, Deployment, Service or Run belongs to. */
  runtime: 'kruntimes.io/runtime',
  /** UID of the Run an object was created for. */
  runUID: 'kruntimes.io/run-uid',
  /** Schedule that created a Run (RunSchedule, later). */
  schedule: 'kruntimes.io/schedule',
  component: 'app.kubernetes.io/component',
  partOf: 'app.kubernetes.io/part-of',
  managedBy: 'app.kubernetes.io/managed-by',
} as const;

export const PART_OF = 'kruntimes';

/** Annotations on Runtime Pods. */
export const POD_ANNOTATIONS = {
  /**
   * Set by the controller-manager's autoscaler on an empty Pod it chose to remove: the
   * scheduler binds nothing new there and its runtimed refuses new claims (PodDraining).
   * Removed again if the Pod is still needed.
   */
  scaleDown: 'kruntimes.io/scale-down',
  /**
   * Kubernetes' own: the ReplicaSet removes Pods of lower cost first. The autoscaler sets it
   * from each Pod's held slots (a Pod marked for scale-down gets the lowest).
   */
  deletionCost: 'controller.kubernetes.io/pod-deletion-cost',
} as const;

/**
 * Annotations runtimed writes on its Pod Lease at every renewal, read by stale-recovery:
 * which Run epochs it holds, and which it confirmed released (UnregisterFunction or task
 * stopped), each a JSON array of `{ "uid", "attempt" }`.
 */
export const LEASE_ANNOTATIONS = {
  heldRuns: 'kruntimes.io/held-runs',
  releasedRuns: 'kruntimes.io/released-runs',
} as const;

/** Reasons of the Kubernetes Events kruntimes components record on Runs. */
export const EVENT_REASONS = {
  /** runtimed could not reach the owner of a Run, or found it stale: stale-recovery re-checks the Run at once. */
  ownerUnreachable: 'OwnerUnreachable',
  /** The scheduler will not bind a Run: its Runtime is suspended, its namespace blocked, or its creator may not use the Runtime. */
  runtimeSuspended: 'RuntimeSuspended',
  namespaceBlocked: 'NamespaceBlocked',
  forbidden: 'Forbidden',
  /** The scheduler will not bind a Run yet: its namespace holds all the run slots its `kruntimes.io/run-slots` cap allows. */
  runSlotCapReached: 'RunSlotCapReached',
  /** Runtime: the autoscaler raised or lowered spec.replicas (message: why). */
  scaledUp: 'ScaledUp',
  scaledDown: 'ScaledDown',
  /** Runtime (Warning): spec.replicas was changed by someone else while spec.scaling is set; the autoscaler put it back. */
  scaleOverridden: 'ScaleOverridden',
  /** Run: its Pod was told to stop and handed it over; the next attempt is not counted against maxAttempts. */
  drained: 'Drained',
} as const;

/**
 * The verb on `runtimes.kruntimes.io` that creating a Run on a Runtime needs (checked by the
 * ValidatingAdmissionPolicy at create, and again by the scheduler at every assignment).
 */
export const RUNTIME_USE_VERB = 'use';

/**
 * What a user needs, beyond creating Runs, to run code on the Runtimes of a namespace: the
 * chart's ClusterRole kruntimes-runtime-user. The controller-manager holds it too (it
 * creates the Runs of RunSchedules; the policy checked the RunSchedule's writer).
 */
export const RUNTIME_USER_RULES = [{ apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: [RUNTIME_USE_VERB] }] as const;

/** Names of the admission policies the chart installs (libs/crds renders them). */
export const ADMISSION_POLICY_NAMES = {
  /** MutatingAdmissionPolicy: stamps spec.creator on a Run at create. */
  runCreator: 'kruntimes.io-run-creator',
  /** ValidatingAdmissionPolicy: `use` on the Runtime at create, spec.creator as stamped and immutable. */
  runAdmission: 'kruntimes.io-run-admission',
  /** ValidatingAdmissionPolicy: `use` on the Runtime a RunSchedule's Runs will name. */
  runScheduleAdmission: 'kruntimes.io-runschedule-admission',
} as const;

/**
 * A namespace labelled `kruntimes.io/blocked=true` binds no new Run (block policy); Runs
 * already bound there are not touched.
 */
export const NAMESPACE_BLOCKED_LABEL = 'kruntimes.io/blocked';

/**
 * A namespace annotated `kruntimes.io/automatic-retry: "false"` forbids the automatic retry
 * of a retrySafe task after a lost owner there (retry policy); it can only narrow the
 * cluster default (`--automatic-retry`), never allow what the cluster forbids.
 */
export const NAMESPACE_AUTOMATIC_RETRY_ANNOTATION = 'kruntimes.io/automatic-retry';

/**
 * A namespace annotated `kruntimes.io/run-slots: "N"` holds at most N run slots at once
 * (Runs bound and holding a Pod unit, over all its Runtimes): the scheduler binds no more
 * and the others wait Pending with RunSlotCapReached. Set by whoever may edit the
 * Namespace (a cluster admin, as for the blocked label), not by its tenants.
 */
export const NAMESPACE_RUN_SLOTS_ANNOTATION = 'kruntimes.io/run-slots';

/** Where runtimed finds its workload certificate (the `<runtime>-runtimed-tls` Secret). */
export const RUNTIMED_TLS_MOUNT_PATH = '/var/run/kruntimes/tls';

/** The per-Runtime Secret with runtimed's workload certificate, kept by the controller-manager. */
export function runtimedTlsSecretName(runtime: string): string {
  return `${runtime}-runtimed-tls`;
}

/** Condition types. */
export const CONDITION_TYPES = {
  /** Run: the function is registered and accepts invokes (always False for tasks until success). */
  ready: 'Ready',
  /** Runtime: at least one Runtime Pod is ready. */
  available: 'Available',
  /** Runtime: the Deployment is rolling out. */
  progressing: 'Progressing',
  /**
   * Run: the source snapshot is in status.source (True), or why it is not yet (False; its
   * lastTransitionTime starts the bounded wait before the Run fails).
   */
  sourceResolved: 'SourceResolved',
  /** Runtime with spec.scaling: what the autoscaler decided and why. */
  scaling: 'Scaling',
  /** Runtime: whether each Run on one of its Pods is walled from the others (status.runIsolation). */
  runsIsolated: 'RunsIsolated',
} as const;

/** The execution snapshot of a Run's source (docs/lifecycle.md "Source snapshot"). */
export const SOURCE_SNAPSHOT = {
  /** The snapshot ConfigMap's only key. */
  key: 'source',
  /** Snapshot ConfigMaps are named this prefix plus the first `nameHexChars` hex digits of the digest. */
  namePrefix: 'krt-src-',
  nameHexChars: 20,
  /** The full digest, on the snapshot ConfigMap. */
  digestAnnotation: 'kruntimes.io/source-digest',
  /** How long a Run stays Pending with an unresolvable source before it fails. */
  maxWaitSeconds: 5 * 60,
} as const;

/** The snapshot ConfigMap of a digest (`sha256:<64 hex>`). */
export function snapshotConfigMapName(digest: string): string {
  const hex = digest.startsWith('sha256:') ? digest.slice('sha256:'.length) : digest;
  return `${SOURCE_SNAPSHOT.namePrefix}${hex.slice(0, SOURCE_SNAPSHOT.nameHexChars)}`;
}

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/**
 * CamelCase reasons of the Run `Ready` condition and of `status.reason`. Every phase
 * and every step of scheduling, registering, retrying, cancelling and recovering has
 * its own, so that `kubectl get run -o yaml` explains what the platform is waiting for.
 */
export const RUN_REASONS = {
  // Pending
  awaitingSchedule: 'AwaitingSchedule',
  runtimeNotFound: 'RuntimeNotFound',
  noReadyPods: 'NoReadyPods',
  noCapacity: 'NoCapacity',
  retryBackoff: 'RetryBackoff',
  /**
   * Pending: the runtimed of the Pod it was bound to refused the claim, because the Pod
   * already held `spec.runs` Runs (a bind beyond capacity, e.g. by a stale scheduler
   * leader); the Run was given back for scheduling, at the same attempt.
   */
  podAtCapacity: 'PodAtCapacity',
  /**
   * Pending: every slot of the Runtime is taken (or it has no Pod yet) and it is scaling up,
   * or is at its maximum; the message says which, with the Runtime's Pods and slots.
   */
  waitingForCapacity: 'WaitingForCapacity',
  /**
   * Pending: the Pod it was bound to is stopping (draining) or marked for scale-down, and
   * its runtimed refused the claim; given back for scheduling at the same attempt.
   */
  podDraining: 'PodDraining',
  /**
   * Pending: its function's Pod was told to stop (rollout, scale-down, eviction, node drain)
   * and handed it over after unregistering it; the new attempt is a planned move, not
   * counted against maxAttempts (status.plannedMoves).
   */
  drained: 'Drained',
  /**
   * Pending (condition SourceResolved False), then Failed after SOURCE_SNAPSHOT.maxWaitSeconds:
   * the source ConfigMap or its key does not exist.
   */
  sourceNotFound: 'SourceNotFound',
  /** The source is over the source bound (BOUNDS.inlineSourceBytes). */
  sourceTooLarge: 'SourceTooLarge',
  /** The platform may not read the source ConfigMap (403). */
  sourceForbidden: 'SourceForbidden',
  /**
   * The source is not the one pinned (spec.source.digest), or, at runtimed, the snapshot
   * it is about to run is not status.source.digest (then Failed at once, nothing run).
   */
  sourceDigestMismatch: 'SourceDigestMismatch',
  /** A ConfigMap of the snapshot's name exists with other content, or is not immutable. */
  sourceSnapshotConflict: 'SourceSnapshotConflict',
  /** Condition SourceResolved True: status.source records the snapshot. */
  sourceSnapshotted: 'SourceSnapshotted',
  /** Pending: the Runtime has `spec.suspend: true` (block policy); lifting it lets the Run bind. */
  runtimeSuspended: 'RuntimeSuspended',
  /** Pending: the namespace is labelled `kruntimes.io/blocked=true` (block policy). */
  namespaceBlocked: 'NamespaceBlocked',
  /**
   * Pending: the user recorded as the Run's creator may no longer `use` its Runtime (the
   * scheduler's SubjectAccessReview at assignment); granting it again lets the Run bind.
   */
  forbidden: 'Forbidden',
  /**
   * Pending: the namespace already holds as many run slots as its `kruntimes.io/run-slots`
   * annotation allows (or the annotation is not a whole number, read as 0); binds when a
   * slot of the namespace frees or the cap is raised.
   */
  runSlotCapReached: 'RunSlotCapReached',
  // Scheduled / Running
  scheduled: 'Scheduled',
  preparing: 'Preparing',
  registering: 'Registering',
  executing: 'Executing',
  // Ready
  functionRegistered: 'FunctionRegistered',
  // not ready while active
  registrationLost: 'RegistrationLost',
  recovering: 'Recovering',
  cancelling: 'Cancelling',
  terminating: 'Terminating',
  waitingInput: 'WaitingInput',
  /** Pending: a response was accepted and the continuation attempt waits to be scheduled. */
  inputReceived: 'InputReceived',
  // terminal
  succeeded: 'Succeeded',
  failed: 'Failed',
  nonZeroExit: 'NonZeroExit',
  registrationFailed: 'RegistrationFailed',
  retriesExhausted: 'RetriesExhausted',
  timeout: 'Timeout',
  idleTimeout: 'IdleTimeout',
  cancelled: 'Cancelled',
  cancelledBeforeStart: 'CancelledBeforeStart',
  interrupted: 'Interrupted',
  ownerLost: 'OwnerLost',
  /**
   * Interrupted: the Runtime Server was killed (SIGKILL, out of memory) or crashed while the
   * task ran, and took the task with it; runtimed, its owner, is still there.
   */
  runtimeServerLost: 'RuntimeServerLost',
  cancelUnconfirmed: 'CancelUnconfirmed',
  /** Interrupted: its Pod was told to stop and the task was still running when the drain window (spec.drainSeconds) ended. */
  drainWindowExceeded: 'DrainWindowExceeded',
  /** Exit 0, but a declared artifact is not in the manifest or not in the store. */
  artifactMissing: 'ArtifactMissing',
  /** Exit 0, but a stored artifact differs from its manifest entry (size, digest) or its declaration. */
  artifactInvalid: 'ArtifactInvalid',
} as const;

export type RunReason = (typeof RUN_REASONS)[keyof typeof RUN_REASONS];

/** Reasons of the Runtime `Available` and `Progressing` conditions. */
export const RUNTIME_REASONS = {
  podsReady: 'PodsReady',
  noPodsReady: 'NoPodsReady',
  rollingOut: 'RollingOut',
  rolledOut: 'RolledOut',
  invalidSpec: 'InvalidSpec',
  // Scaling (spec.scaling set)
  /** Demand (held + Pending + spare) needs more Pods: raised at once. */
  scaledUp: 'ScaledUp',
  /** Demand stayed lower for scaleDownDelaySeconds: empty Pods were removed. */
  scaledDown: 'ScaledDown',
  /** Demand is lower, but not yet for scaleDownDelaySeconds, or the Pods to remove still hold Runs. */
  scaleDownDelayed: 'ScaleDownDelayed',
  /** Demand needs more than maxReplicas. */
  atMaximum: 'AtMaximum',
  /** The pool fits its demand. */
  steady: 'Steady',
  // RunsIsolated
  /** True: its Pods have user namespaces of their own and every Run is its own user. */
  perRunUser: 'PerRunUser',
  /** False: user namespaces are off (the chart's controllerManager.runtimeUserNamespaces); Runs on one Pod share its user. */
  userNamespacesOff: 'UserNamespacesOff',
} as const;

export type RuntimeReason = (typeof RUNTIME_REASONS)[keyof typeof RUNTIME_REASONS];

/** Headers of the invoke dataplane. */
export const INVOCATION_ID_HEADER = 'x-kruntime-invocation-id';
