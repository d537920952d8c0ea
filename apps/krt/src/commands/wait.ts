import { setTimeout as sleep } from 'node:timers/promises';
import { currentPhase, waitOutcome } from '@kruntimes/run-state';
import type { WaitTarget } from '@kruntimes/run-state';
import type { Command } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import type { CommandContext } from './context.ts';

/** Pause after a watch that could not start or closed early, so that the loop cannot spin. */
const REWATCH_PAUSE_MS = 1000;

const WANTED: Record<WaitTarget, string> = { ready: 'Ready', finished: 'finished', input: 'waiting for input' };

/**
 * Waits until the Run is Ready (`--for ready`), finished (`--for done`) or waiting for
 * input (`--for input`), as run-state's waitOutcome says: re-reads the Run at every change
 * a watch reports, bounded by the timeout. `done` is reached by any terminal phase,
 * successful or not (exit 0, the phase is printed); a Run that finished can never become
 * Ready or wait (exit 5). `input` prints the schema a response must satisfy.
 */
export async function waitCommand(ctx: CommandContext, command: Extract<Command, { name: 'wait' }>): Promise<ExitCode> {
  const deadline = ctx.now() + command.timeoutMs;
  const wanted = WANTED[command.target];
  for (;;) {
    const run = await ctx.runs.get(command.run);
    const phase = currentPhase(run);
    switch (waitOutcome(phase, command.target)) {
      case 'satisfied':
        ctx.io.stdout.write(`run/${command.run} ${phase}\n`);
        if (command.target === 'input') ctx.io.stdout.write(inputSchemaText(run.status?.waitingInput?.schema));
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

/** The input schema of a waiting Run, pretty-printed after a heading line (as recorded if it is not JSON). */
export function inputSchemaText(schema: string | undefined): string {
  if (schema === undefined) return 'input schema: (none recorded)\n';
  let pretty = schema;
  try {
    pretty = JSON.stringify(JSON.parse(schema), null, 2);
  } catch {
    // Shown as recorded: the state machine accepted it, so it is JSON unless something else wrote it.
  }
  return `input schema:\n${pretty}\n`;
}
