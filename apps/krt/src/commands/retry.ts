import { API_GROUP_VERSION } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase, isTerminal } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { NewRun } from '../kube.ts';
import { shortDigest } from '../output.ts';
import type { CommandContext } from './context.ts';

/**
 * The retry of a finished Run (issue 9): a new Run with the same spec and `parentRunRef`
 * naming the original. It runs the parent's source snapshot: `spec.source.digest` pins the
 * parent's status.source.digest (the scheduler's snapshot controller takes the snapshot
 * ConfigMap of that digest, never an edited ConfigMap), unless `refreshSource`, which
 * drops the pin so that spec.source is read again (issue 26). `cancelRequested` is not copied (a retry of a cancelled Run would
 * otherwise be cancelled at once), and neither is the original's own parentRunRef: the
 * parent is always the Run retried. Named `<name>-retry-<random>` by the API server; a
 * retry of a retry keeps the first name's stem instead of growing `-retry-` suffixes.
 */
export function retryOf(run: Run, options: { refreshSource?: boolean } = {}): NewRun {
  const name = run.metadata.name ?? '';
  const uid = run.metadata.uid ?? '';
  // The new Run's creator is whoever retries it (stamped by the admission policy), never the parent's.
  const { cancelRequested: _cancelRequested, parentRunRef: _parentRunRef, creator: _creator, ...spec } = structuredClone(run.spec);
  const { digest: _digest, ...source } = spec.source;
  // A parent of before snapshots has none to pin: its retry is snapshotted like a new Run.
  const pinned = options.refreshSource === true ? undefined : (run.status?.source?.digest ?? spec.source.digest);
  return {
    apiVersion: API_GROUP_VERSION,
    kind: 'Run',
    metadata: { generateName: `${name.replace(/-retry-[a-z0-9]{5}$/, '')}-retry-` },
    spec: { ...spec, source: pinned === undefined ? source : { ...source, digest: pinned }, parentRunRef: { name, uid } },
  };
}

export async function retryCommand(ctx: CommandContext, command: Extract<Command, { name: 'retry' }>): Promise<ExitCode> {
  const run = await ctx.runs.get(command.run);
  const phase = currentPhase(run);
  if (!isTerminal(phase)) {
    throw new CliError(
      EXIT.usage,
      `Run "${command.run}" is still active (phase ${phase}): only a finished Run can be retried; wait for it (krt wait ${command.run} --for done) or cancel it first (krt cancel ${command.run})`,
    );
  }
  const retry = retryOf(run, { refreshSource: command.refreshSource === true });
  const created = await ctx.runs.create(retry);
  ctx.io.stdout.write(`run/${created.metadata.name ?? ''}\n`);
  const pin = retry.spec.source.digest;
  const source = pin === undefined ? 'its source read again' : `the source snapshot ${shortDigest(pin)}`;
  ctx.io.stderr.write(`created run/${created.metadata.name ?? ''}, a retry of run/${command.run} (${phase}), running ${source}\n`);
  return EXIT.ok;
}
