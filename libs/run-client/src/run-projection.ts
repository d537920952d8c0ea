import type { ObjectMeta, Run, RunSpec, RunStatus } from '@kruntimes/api';

/**
 * The members `keys` of `object` that are set, in a new object: what a cache projection keeps
 * of one part of an object (an absent member stays absent, never `undefined`).
 */
export function kept<T extends object, K extends keyof T>(object: T, keys: readonly K[]): Pick<T, K> {
  const result: Partial<Pick<T, K>> = {};
  for (const key of keys) if (object[key] !== undefined) result[key] = object[key];
  return result as Pick<T, K>;
}

/**
 * The metadata every Run cache keeps: identity (name, namespace, uid), the resourceVersion
 * a fenced write or a preconditioned delete is fenced on, the generation a status write
 * observes, the timestamps and the finalizers (registration cleanup). Labels, annotations
 * (kubectl apply's copy of the whole object among them) and ownerReferences are dropped:
 * no controller reads them from its Run cache; one that selects on a label does so on the
 * server (a labelSelector).
 */
export function runIdentity(metadata: ObjectMeta): ObjectMeta {
  return kept(metadata, [
    'name',
    'namespace',
    'uid',
    'resourceVersion',
    'generation',
    'creationTimestamp',
    'deletionTimestamp',
    'finalizers',
  ]);
}

/**
 * The spec a state-machine transition (run-state's `transition`) reads, so that a cached Run
 * can be handed to writeTransition: the Runtime, which mode (a function's handler and
 * timeouts; a task's args are dropped), cancelRequested, retryPolicy, the declared artifacts
 * and the origin of a Run executed elsewhere. Dropped: the source (inline text; a reader of
 * it gets the full Run with ObjectClient.get), env, timeout, TTL, parentRunRef and creator.
 * A status write sends this spec and the API server keeps the stored one (the status
 * subresource takes only `status` from the body; run-client's integration test shows it).
 */
export function transitionSpec(spec: RunSpec): RunSpec {
  return {
    runtime: spec.runtime,
    source: {},
    mode: spec.mode.function === undefined ? { task: {} } : { function: spec.mode.function },
    ...kept(spec, ['cancelRequested', 'retryPolicy', 'artifacts', 'origin']),
  };
}

/** A Run of `spec` and `status` under runIdentity's metadata: the shape every projection returns. */
export function projectedRun(run: Run, spec: RunSpec, status: RunStatus | undefined): Run {
  return {
    apiVersion: run.apiVersion,
    kind: run.kind,
    metadata: runIdentity(run.metadata),
    spec,
    ...(status === undefined ? {} : { status }),
  };
}
