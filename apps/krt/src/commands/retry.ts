import { API_GROUP_VERSION, runModeKind } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase, finishKind, isTerminal } from '@kruntimes/run-state';
import type { InterruptReason } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { NewRun } from '../kube.ts';
import { shortDigest } from '../output.ts';
import { confirmed } from '../prompt.ts';
import type { CommandContext } from './context.ts';

/**
 * The retry of a finished Run: a new Run with the same spec and `parentRunRef`
 * naming the original. It runs the parent's source snapshot: `spec.source.digest` pins the
 * parent's status.source.digest (the scheduler's snapshot controller takes the snapshot
 * ConfigMap of that digest, never an edited ConfigMap), unless `refreshSource`, which
 * drops the pin so that spec.source is read again (a source fixed since is what the retry runs). `cancelRequested` is not copied (a retry of a cancelled Run would
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

/**
 * What a retry of this finished Run may repeat, or undefined when nothing can: a task Run
 * that ended `Interrupted` (cut short by the platform: it cannot tell how far it got), or
 * a task that is not `retrySafe`, and that ran at least one attempt. A retrySafe task that
 * ended otherwise declared it may run again; a function Run's retry registers the function
 * anew and repeats no invocation.
 */
export function retryRisk(run: Run): string | undefined {
  if (runModeKind(run.spec) === 'function') return undefined;
  const phase = currentPhase(run);
  const kind = finishKind(phase);
  const retrySafe = run.spec.retryPolicy?.retrySafe === true;
  if (retrySafe && kind !== 'interrupted') return undefined;
  const attempt = run.status?.attempt ?? 0;
  // No attempt was ever assigned (cancelled or refused while Pending): no code ran.
  if (attempt < 1) return undefined;
  const name = run.metadata.name ?? '';
  const why = retrySafe ? 'it ended Interrupted' : 'it is a task that is not retrySafe (spec.retryPolicy.retrySafe)';
  const detail = [run.status?.reason, run.status?.message].filter((part) => part !== undefined && part !== '').join(': ');
  const exit = run.status?.exitCode === undefined ? '' : `, exit code ${String(run.status.exitCode)}`;
  const ended = `attempt ${String(attempt)} ended ${phase}${detail === '' && exit === '' ? '' : ` (${detail}${exit})`}`;
  const ran = ranHowFar(kind, run.status?.reason);
  const earlier =
    attempt > 1 ? `; the ${attempt === 2 ? 'attempt' : `${String(attempt - 1)} attempts`} before it may have run as well` : '';
  return (
    `run/${name}: ${why}. Its ${ended}: ${ran}${earlier}. ` +
    'A retry runs the program again from the start, so its external side effects (writes, calls, messages sent) may repeat.'
  );
}

/**
 * Why the platform cut an attempt short, by the Run's Interrupted reason, and that it
 * cannot tell how far the attempt got. Exhaustive over InterruptReason (a new reason
 * does not type-check without its wording); a reason this krt does not know (a newer
 * server's) gets the generic one.
 */
const INTERRUPTED: Record<InterruptReason, string> = {
  OwnerLost: 'its owner was lost',
  RuntimeServerLost: 'its Runtime Server died during it (killed or crashed)',
  DrainWindowExceeded: 'its Pod was stopping and it still ran when the drain window ended',
  CancelUnconfirmed: 'its cancel could not be confirmed (its owner was lost)',
};

/** Pure: what an Interrupted attempt of `reason` may have done, for the retry's warning. */
export function interruptedHowFar(reason: string | undefined): string {
  const why =
    reason !== undefined && Object.hasOwn(INTERRUPTED, reason) ? INTERRUPTED[reason as InterruptReason] : 'the platform cut it short';
  return `${why}, so it may have run partly or wholly`;
}

function ranHowFar(kind: ReturnType<typeof finishKind>, reason: string | undefined): string {
  switch (kind) {
    case 'succeeded':
      return 'it ran wholly';
    case 'failed':
    case 'timedOut':
    case 'cancelled':
      return 'it may have run partly';
    case 'interrupted':
      return interruptedHowFar(reason);
    case undefined:
      return 'it may have run partly or wholly';
  }
}

export type RetryConfirmation =
  /** Nothing may repeat: retry. */
  | { kind: 'retry' }
  /** `--yes`: retry, saying what may repeat. */
  | { kind: 'retryWarned'; warning: string }
  /** On a terminal: say what may repeat and ask [y/N]. */
  | { kind: 'ask'; warning: string }
  /** No terminal to ask on and no `--yes`: refused, nothing created. */
  | { kind: 'refuse'; warning: string };

/** Whether `krt retry` may go ahead, must ask first, or is refused (docs/lifecycle.md "Retries"). */
export function decideRetryConfirmation(input: { run: Run; yes: boolean; terminal: boolean }): RetryConfirmation {
  const warning = retryRisk(input.run);
  if (warning === undefined) return { kind: 'retry' };
  if (input.yes) return { kind: 'retryWarned', warning };
  return input.terminal ? { kind: 'ask', warning } : { kind: 'refuse', warning };
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
  // The question needs a terminal to answer on, and somewhere the user sees it.
  const terminal = process.stdin.isTTY && process.stderr.isTTY;
  const confirmation = decideRetryConfirmation({ run, yes: command.yes === true, terminal });
  switch (confirmation.kind) {
    case 'retry':
      break;
    case 'retryWarned':
      ctx.io.stderr.write(`warning: ${confirmation.warning}\n`);
      break;
    case 'refuse':
      throw new CliError(
        EXIT.notConfirmed,
        `${confirmation.warning} Not retried: there is no terminal to confirm on; give --yes to retry anyway (krt retry ${command.run} --yes)`,
      );
    case 'ask':
      ctx.io.stderr.write(`${confirmation.warning}\n`);
      if (!(await confirmed(`retry run/${command.run}? [y/N] `))) {
        throw new CliError(EXIT.notConfirmed, `run/${command.run} not retried (not confirmed)`);
      }
      break;
  }
  const retry = retryOf(run, { refreshSource: command.refreshSource === true });
  const created = await ctx.runs.create(retry);
  ctx.io.stdout.write(`run/${created.metadata.name ?? ''}\n`);
  const pin = retry.spec.source.digest;
  const source = pin === undefined ? 'its source read again' : `the source snapshot ${shortDigest(pin)}`;
  ctx.io.stderr.write(`created run/${created.metadata.name ?? ''}, a retry of run/${command.run} (${phase}), running ${source}\n`);
  return EXIT.ok;
}
