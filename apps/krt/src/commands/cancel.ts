import { currentPhase, isTerminal } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { CommandContext } from './context.ts';
import { waitCommand } from './wait.ts';

/**
 * Sets spec.cancelRequested (it may only go false -> true); the platform does the rest.
 * With `--wait`, waits until the Run is terminal (bounded by `--timeout`; a timeout is
 * exit 5) and prints its final phase: Cancelled, or whatever it reached first.
 */
export async function cancelCommand(ctx: CommandContext, command: Extract<Command, { name: 'cancel' }>): Promise<ExitCode> {
  const run = await ctx.runs.get(command.run);
  const phase = currentPhase(run);
  if (isTerminal(phase)) {
    ctx.io.stderr.write(`run/${command.run} already finished (${phase}); nothing to cancel\n`);
    if (command.wait !== undefined) ctx.io.stdout.write(`run/${command.run} ${phase}\n`);
    return EXIT.ok;
  }
  if (run.spec.cancelRequested !== true) await ctx.runs.patch(command.run, { spec: { cancelRequested: true } });
  ctx.io.stdout.write(`run/${command.run} cancel requested\n`);
  if (command.wait === undefined) return EXIT.ok;
  try {
    return await waitCommand(ctx, { name: 'wait', run: command.run, target: 'finished', timeoutMs: command.wait.timeoutMs });
  } catch (error) {
    // The cancel stays requested; say so, since the platform goes on with it.
    if (error instanceof CliError) throw new CliError(error.exitCode, `cancel requested, but ${error.message}`, { cause: error });
    throw error;
  }
}
