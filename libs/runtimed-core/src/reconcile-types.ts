import type { RUN_REASONS, Run, RunArtifacts, RuntimeLanguage } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import type { runtimeServerV1 } from '@kruntimes/proto';
import type { AutomaticRetryPolicy } from '@kruntimes/run-state';
import type { Logger } from 'pino';
import type { ArtifactVerification } from './artifact-verification.ts';
import type { Epoch } from './epoch.ts';
import type { RuntimedMetrics } from './metrics.ts';
import type { LocalRun } from './plan.ts';
import type { RunClient } from './run-client.ts';
import type { RuntimeServerClient } from './runtime-server.ts';
import type { ConfigMapReader, Workspaces } from './workspace.ts';

// The types the reconciler and its step modules (run-work, task-execution, function-lifecycle,
// input-wait, resume, artifact-outcome) all speak. They live here, importing none of those
// modules, so that the modules import each other without a loop. The collaborators that are
// classes of those modules (ArtifactGrants, CheckpointReader) are described by the methods used.

export interface RunReconcilerOptions {
  podUID: string;
  podName: string;
  runtime: string;
  language: RuntimeLanguage;
  gatewayHost: string;
  gatewayCaPem: string | undefined;
  cancelGraceMs: number;
  /** This Pod's Run capacity (`KRT_RUNS_PER_POD`): a claim beyond it is refused. Undefined: not checked. */
  runsPerPod: number | undefined;
  /** The informer cache of the namespace's Runs. */
  cached(namespace: string, name: string): ReadonlyDeep<Run> | undefined;
  /** Every Run of the namespace in the informer cache (the claim check counts this Pod's). */
  cachedRuns(namespace: string): readonly ReadonlyDeep<Run>[];
  runs: RunClient;
  server: RuntimeServerCalls;
  /** Upload grants and verification for task Runs that declare artifacts. */
  artifacts: TaskArtifacts;
  workspaces: WorkspaceSteps;
  readConfigMap: ConfigMapReader;
  /**
   * The organisation's retry policy for a namespace (the cluster default, KRT_AUTOMATIC_RETRY,
   * narrowed by the namespace's annotation): asked only before an interrupted retrySafe task
   * would run again.
   */
  automaticRetryPolicy: (namespace: string) => Promise<AutomaticRetryPolicy>;
  logger: Logger;
  metrics: RuntimedMetrics;
  /**
   * Writes the Pod Lease now, with the releases confirmed so far (the third fence proof),
   * before a handover's status write. Resolves once written.
   */
  reportReleased(): Promise<void>;
  /** Records a Normal Event on a Run (best effort: a failure is logged, never thrown). */
  recordEvent(run: { name: string; uid: string }, reason: string, message: string): void;
  /** Re-enqueue a key (after a background execution ended). */
  enqueue(key: string): void;
  now?: () => number;
}

/** The Runtime Server calls the reconciler and its steps make (a table test fakes them). */
export type RuntimeServerCalls = Pick<RuntimeServerClient, 'register' | 'status' | 'unregister' | 'cancel' | 'execute' | 'execution'>;

/** The workspace steps the reconciler and its steps take (a table test fakes them). */
export type WorkspaceSteps = Pick<Workspaces, 'prepare' | 'attemptDir' | 'outcomesDir' | 'remove'>;

/** What one reconcile of one Run works on; every step of it takes this instead of its parts. */
export interface ReconcileContext {
  key: string;
  /** The cached Run, or the object a step just wrote (claim goes on from it). */
  run: ReadonlyDeep<Run>;
  /** Set when `run` is the object a write of this very reconcile returned: the live Run as of that write. */
  written?: boolean;
  epoch: Epoch;
  /** Carries the Run's key, UID and attempt. */
  log: Logger;
}

/** In-memory state of one Run this Pod works on. */
export interface LocalState extends LocalRun {
  registrationId?: string;
  execution?: Execution;
}

export interface Execution {
  id: string;
  abort: AbortController;
  /**
   * Set by whoever stops it on purpose, so the execution's own ending writes nothing.
   * `waitingInput`: AwaitInput recorded (or is recording) WaitingInput for this attempt.
   * `drain`: the Pod's drain window ended while it ran (DrainWindowExceeded).
   */
  stoppedFor?: 'cancel' | 'expire' | 'release' | 'waitingInput' | 'drain';
  /**
   * While AwaitInput's status write is in flight: settles once it did (stoppedFor is then
   * still `waitingInput` only if the write succeeded). An ending meanwhile waits for it.
   */
  waitWrite?: Promise<void>;
  /** What the Runtime Server reported at the end (kept for whoever stopped it to record). */
  exited?: { exitCode: number; signal: string };
  done: Promise<void>;
}

/** What the task execution needs for Runs that declare artifacts. */
export interface TaskArtifacts {
  /** The ArtifactGrants service's tokens: one for each execution, withdrawn when it ends. */
  grants: {
    register(
      epoch: Epoch,
      artifacts: ReadonlyDeep<RunArtifacts>,
      execution?: Pick<Execution, 'stoppedFor' | 'waitWrite'>,
    ): { token: string; declared: runtimeServerV1.DeclaredArtifact[] };
    unregister(token: string): void;
  };
  /** Where the Runtime Server reaches the ArtifactGrants service (loopback or unix socket). */
  grantAddress: string;
  verification: Pick<ArtifactVerification, 'verify' | 'removeOthers'>;
  /** A continuation's checkpoint (status.resume), read and verified before Execute. */
  checkpoints: { load(ctx: ReconcileContext, signal: AbortSignal): Promise<ResumeLoad> };
}

/**
 * What a continuation attempt starts from: nothing to resume (not a continuation), the
 * checkpoint's verified bytes with the response, or why it cannot start.
 */
export type ResumeLoad =
  | { type: 'none' }
  | { type: 'ready'; resume: runtimeServerV1.Resume }
  /** The checkpoint is not in the store, or not the bytes that were recorded: the same object would fail again. */
  | { type: 'failed'; reason: typeof RUN_REASONS.artifactMissing | typeof RUN_REASONS.artifactInvalid; message: string }
  /** The store could not be read within the retries: the attempt is interrupted, as for artifacts at exit 0. */
  | { type: 'interrupted'; message: string };
