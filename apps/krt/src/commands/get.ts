import type { Command } from '../args.ts';
import { EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { formatRuns, formatRuntimes, pendingHint, waitingHint } from '../output.ts';
import type { CommandContext } from './context.ts';

export async function getCommand(ctx: CommandContext, command: Extract<Command, { name: 'get' }>): Promise<ExitCode> {
  const runs = command.run === undefined ? await ctx.runs.list() : [await ctx.runs.get(command.run)];
  const table = command.output === 'table' || command.output === 'wide';
  // The whole namespace in a table: its Runtimes (Pods, slots, scaling) above its Runs, as `kubectl get runtimes,runs`.
  if (command.run === undefined && table) {
    const runtimes = await ctx.runs.listRuntimes();
    if (runtimes !== undefined && runtimes.length > 0) ctx.io.stdout.write(`${formatRuntimes(runtimes, ctx.now())}\n`);
  }
  if (runs.length === 0 && (command.output === 'table' || command.output === 'wide')) {
    ctx.io.stderr.write(`No Runs in namespace ${ctx.runs.namespace}.\n`);
    return EXIT.ok;
  }
  ctx.io.stdout.write(formatRuns(runs, command.output, ctx.now()));
  const [only] = runs;
  if (command.run !== undefined && only !== undefined && (command.output === 'table' || command.output === 'wide')) {
    const hint = waitingHint(only) ?? pendingHint(only);
    if (hint !== undefined) ctx.io.stderr.write(hint);
  }
  return EXIT.ok;
}
