import type { Command } from '../args.ts';
import { EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { CommandContext } from './context.ts';

/** Deletes the Run; an active function Run is unregistered by runtimed before it goes (finalizer). */
export async function deleteCommand(ctx: CommandContext, command: Extract<Command, { name: 'delete' }>): Promise<ExitCode> {
  await ctx.runs.delete(command.run);
  ctx.io.stdout.write(`run/${command.run} deleted\n`);
  return EXIT.ok;
}
