import { isKruntimesError } from '@kruntimes/errors';
import type { ArtifactRecord } from '@kruntimes/api';
import type { runtimeServerV1 } from '@kruntimes/proto';
import type { ArtifactFailureReason } from '@kruntimes/run-state';
import type { ArtifactAttempt } from './artifact-verification.ts';
import type { Execution, ReconcileContext } from './run-work.ts';
import type { TaskArtifacts } from './reconcile-types.ts';

export type { TaskArtifacts } from './reconcile-types.ts';

/**
 * ExecuteRequest.artifacts for one execution of a Run with spec.artifacts (undefined
 * without: such a Run gets no endpoint and no checks), and how to withdraw its token
 * once the execution ended.
 */
export function grantAccess(
  artifacts: TaskArtifacts,
  { run, epoch }: ReconcileContext,
  execution: Execution,
): { access: runtimeServerV1.ArtifactAccess; withdraw(): void } | undefined {
  const declared = run.spec.artifacts;
  if (declared === undefined) return undefined;
  // The execution goes with the token: AwaitInput marks it stopped on purpose.
  const { token, declared: outputs } = artifacts.grants.register(epoch, declared, execution);
  return {
    access: { grantAddress: artifacts.grantAddress, grantToken: token, declared: outputs },
    withdraw: () => {
      artifacts.grants.unregister(token);
    },
  };
}

export type ExitZeroOutcome =
  | { type: 'succeeded'; artifacts?: ArtifactRecord[] }
  | { type: 'failed'; reason: ArtifactFailureReason; message: string }
  | { type: 'interrupted'; message: string };

/** How an exit 0 ends: Succeeded (with the verified artifacts), Failed for the artifacts, or interrupted (the store could not be read). */
export async function exitZeroOutcome(
  artifacts: TaskArtifacts,
  ctx: ReconcileContext,
  manifest: readonly runtimeServerV1.ManifestEntry[],
): Promise<ExitZeroOutcome> {
  const target = artifactAttempt(ctx);
  if (target === undefined) return { type: 'succeeded' };
  try {
    const outcome = await artifacts.verification.verify(target, manifest, ctx.log);
    if (outcome.type === 'failed') return outcome;
    return { type: 'succeeded', artifacts: outcome.records };
  } catch (error) {
    if (isKruntimesError(error) && error.code === 'ArtifactStoreUnavailable') return { type: 'interrupted', message: error.message };
    throw error;
  }
}

/** After Succeeded: the objects the manifest does not name go (best effort, logged). */
export async function removeUnnamed(artifacts: TaskArtifacts, ctx: ReconcileContext, kept: readonly ArtifactRecord[]): Promise<void> {
  const target = artifactAttempt(ctx);
  if (target !== undefined) await artifacts.verification.removeOthers(target, kept, ctx.log);
}

function artifactAttempt({ run, epoch }: ReconcileContext): ArtifactAttempt | undefined {
  const declared = run.spec.artifacts;
  if (declared === undefined) return undefined;
  return { namespace: epoch.namespace, uid: epoch.uid, attempt: epoch.attempt, store: declared.store, outputs: declared.outputs };
}
