import { currentPhase, isTerminal } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { CommandContext } from './context.ts';

/** Sets spec.cancelRequested (it may only go false -> true); the platform does the rest. */
export async function cancelCommand(ctx: CommandContext, command: Extract<Command, { name: 'cancel' }>): Promise<ExitCode> {
  const run = await ctx.runs.get(command.run);
  const phase = currentPhase(run);
  if (isTerminal(phase)) {
    ctx.io.stderr.write(`run/${command.run} already finished (${phase}); nothing to cancel\n`);
    return EXIT.ok;
  }
  if (run.spec.cancelRequested !== true) await ctx.runs.patch(command.run, { spec: { cancelRequested: true } });
  ctx.io.stdout.write(`run/${command.run} cancel requested\n`);
  return EXIT.ok;
}
