import { readLocalResult, syncLocalResult, syncedRun } from '@kruntimes/local-run-core';
import type { SyncCommandLine } from '../args.ts';
import { EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { CommandContext } from './context.ts';

/**
 * `krt sync ID|DIR`: records a finished local run on the cluster as a Run with
 * spec.origin, with the user's kubeconfig only. Created once: a retry finds the same
 * Run (same origin) and creates no second.
 */
export async function syncCommand(ctx: CommandContext, command: SyncCommandLine): Promise<ExitCode> {
  const local = await readLocalResult(command.target, process.cwd());
  const wanted = syncedRun(local, { withoutArtifacts: command.withoutArtifacts });
  const { run, created } = await syncLocalResult(
    { namespace: ctx.runs.namespace, create: (body) => ctx.runs.tryCreate(body), get: (name) => ctx.runs.get(name) },
    wanted,
  );
  const name = run.metadata.name ?? '';
  ctx.io.stdout.write(`run/${name} ${created ? 'created' : 'already synced'}\n`);
  ctx.io.stderr.write(
    `local run ${local.runId} (${local.status.phase ?? ''}, lock ${local.lockDigest}) is Run ${ctx.runs.namespace}/${name}; the controller-manager records its result\n`,
  );
  return EXIT.ok;
}
