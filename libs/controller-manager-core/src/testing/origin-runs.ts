import type { ObjectMeta, Run, RunOrigin, RunStatus } from '@kruntimes/api';

// Fixtures of the origin tests (decideOrigin's table and the origin reconciler's shell):
// the Run `krt run --local` synced, built once so that both describe the same object.

/** A local run's record as `krt run --local` syncs it: attempt 1 of 1 failed with exit code 3. */
export const LOCAL_ORIGIN: RunOrigin = {
  local: {
    runId: '20261204-100000-a1b2c3',
    lockDigest: `sha256:${'a'.repeat(64)}`,
    result: {
      phase: 'Failed',
      reason: 'NonZeroExit',
      message: 'attempt 1 of 1: exited with code 3',
      exitCode: 3,
      startTime: '2026-12-04T10:00:00Z',
      completionTime: '2026-12-04T10:00:01Z',
    },
  },
};

export interface OriginRunShape {
  /** spec.origin; none when undefined. */
  origin?: RunOrigin | undefined;
  status?: RunStatus | undefined;
  /** A function Run (the CRD and the state machine refuse it an origin), else a task. */
  function?: boolean | undefined;
}

/** A python Run with `metadata` as given, its mode, origin and status as `shape` says. */
export function originRun(metadata: ObjectMeta, shape: OriginRunShape = {}): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata,
    spec: {
      runtime: 'python',
      source: { inline: 'x' },
      mode: shape.function === true ? { function: { handler: 'h' } } : { task: {} },
      ...(shape.origin === undefined ? {} : { origin: shape.origin }),
    },
    ...(shape.status === undefined ? {} : { status: shape.status }),
  };
}
