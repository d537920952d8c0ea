import { setTimeout as sleep } from 'node:timers/promises';
import { currentPhase, waitOutcome } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { CommandContext } from './context.ts';

/** Pause after a watch that could not start or closed early, so that the loop cannot spin. */
const REWATCH_PAUSE_MS = 1000;

/**
 * Waits until the Run is Ready (`--for ready`) or finished (`--for done`), as run-state's
 * waitOutcome says: re-reads the Run at every change a watch reports, bounded by the
 * timeout. `done` is reached by any terminal phase, successful or not (exit 0, the phase
 * is printed); a Run that finished can never become Ready (exit 5).
 */
export async function waitCommand(ctx: CommandContext, command: Extract<Command, { name: 'wait' }>): Promise<ExitCode> {
  const deadline = ctx.now() + command.timeoutMs;
  const wanted = command.target === 'ready' ? 'Ready' : 'finished';
  for (;;) {
    const run = await ctx.runs.get(command.run);
    const phase = currentPhase(run);
    switch (waitOutcome(phase, command.target)) {
      case 'satisfied':
        ctx.io.stdout.write(`run/${command.run} ${phase}\n`);
        return EXIT.ok;
      case 'unreachable':
        throw new CliError(
          EXIT.unavailable,
          `Run "${command.run}" finished (${phase}${run.status?.reason === undefined ? '' : `, ${run.status.reason}`}) and will never be ${wanted}`,
        );
      case 'keepWaiting':
        break;
    }
    const remaining = deadline - ctx.now();
    if (remaining <= 0) {
      throw new CliError(
        EXIT.unavailable,
        `timed out after ${command.timeoutMs} ms waiting for Run "${command.run}" to be ${wanted} (phase ${phase})`,
      );
    }
    const how = await ctx.runs.nextChange(command.run, run.metadata.resourceVersion ?? '', remaining);
    if (how === 'ended') await sleep(Math.min(REWATCH_PAUSE_MS, Math.max(0, deadline - ctx.now())));
  }
}
