import { readFile } from 'node:fs/promises';
import type { Run, RunPhase } from '@kruntimes/api';
import { currentPhase, finishKind, waitOutcome } from '@kruntimes/run-state';
import type { FinishKind } from '@kruntimes/run-state';
import type { RunClusterCommandLine } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { RuntimedLogs } from '../pod-logs.ts';
import { confirmed } from '../prompt.ts';
import { runFromManifest } from '../run-manifest.ts';
import type { CommandContext } from './context.ts';
import { RecordWriter, ShownRecords, followRunLogs } from './logs.ts';

/** Pause after a watch that could not start or closed early, so that the loop cannot spin. */
const REWATCH_PAUSE_MS = 1_000;
/** Bound of one watch; the loop re-reads the Run after each. */
const WATCH_SLICE_MS = 30_000;

/** The exit code of a finished Run (README): 0 Succeeded, 1 Failed, 5 Timeout and the platform's ends. */
export function exitCodeForFinish(kind: FinishKind): ExitCode {
  switch (kind) {
    case 'succeeded':
      return EXIT.ok;
    case 'failed':
      return EXIT.functionError;
    case 'timedOut':
    case 'cancelled':
    case 'interrupted':
      return EXIT.unavailable;
  }
}

/** One progress line: the phase, the time since the Run was created, and what the Run says about it. */
export function progressLine(run: Pick<Run, 'status'>, phase: RunPhase, elapsedMs: number): string {
  const status = run.status;
  const details = [
    status?.assignedPod === undefined ? undefined : `pod ${status.assignedPod}`,
    status?.attempt === undefined || status.attempt <= 1 ? undefined : `attempt ${String(status.attempt)}`,
    status?.reason,
  ].filter((part) => part !== undefined && part !== '');
  const elapsed = `+${(elapsedMs / 1000).toFixed(1)}s`;
  return `${elapsed.padStart(8)}  ${phase}${details.length === 0 ? '' : `  (${details.join(', ')})`}`;
}

/** The closing line of a finished Run: phase, reason, exit code, message, outputs. */
export function summaryLine(name: string, run: Pick<Run, 'status'>, phase: RunPhase): string {
  const status = run.status;
  const why = [status?.reason, status?.exitCode === undefined ? undefined : `exit code ${String(status.exitCode)}`].filter(
    (part) => part !== undefined && part !== '',
  );
  const outputs = status?.outputs === undefined ? '' : `; outputs ${JSON.stringify(status.outputs)}`;
  return `run/${name}: ${phase}${why.length === 0 ? '' : ` (${why.join(', ')})`}${status?.message === undefined || status.message === '' ? '' : `: ${status.message}`}${outputs}`;
}

/**
 * `krt run -f FILE|-`: creates the Run; with --wait, prints each phase change (stderr) until
 * the Run finished (or a function Run is Ready), then its summary, and exits with the code
 * of its end; with --follow, also streams a task's output. Ctrl-C asks (on a terminal)
 * whether to cancel the Run, then exits 130.
 */
export async function runClusterCommand(ctx: CommandContext, command: RunClusterCommandLine): Promise<ExitCode> {
  const text = command.file === '-' ? await readAll(ctx.io.stdin) : await readManifest(command.file);
  const body = runFromManifest(text, {
    file: command.file === '-' ? '(stdin)' : command.file,
    namespace: ctx.runs.namespace,
    ...(command.runName === undefined ? {} : { name: command.runName }),
  });
  const created = await ctx.runs.create(body);
  const name = created.metadata.name ?? '';
  ctx.io.stdout.write(`run/${name} created\n`);
  if (!command.wait) return EXIT.ok;

  const interrupted = new AbortController();
  const onSigint = (): void => {
    interrupted.abort();
  };
  process.once('SIGINT', onSigint);
  try {
    const finished = watchProgress(ctx, name, created, command, interrupted.signal);
    const following = command.follow ? followOutput(ctx, name, created.metadata.uid ?? '', interrupted.signal) : Promise.resolve();
    const [outcome] = await Promise.all([finished, following]);
    if (outcome.kind === 'interrupted') return await askToCancel(ctx, name);
    if (outcome.summary !== undefined) ctx.io.stderr.write(`${outcome.summary}\n`);
    return outcome.code;
  } finally {
    process.removeListener('SIGINT', onSigint);
    // Whichever of the two ended first (a follow refused with 403, say), the other stops too.
    interrupted.abort();
  }
}

/** How the wait ended; `summary` is written once the output that was followed is all out. */
type Outcome = { kind: 'done'; code: ExitCode; summary?: string } | { kind: 'interrupted' };

/** Phase changes as lines on stderr until the Run finished (or is Ready, for a function Run); the summary at the end. */
async function watchProgress(
  ctx: CommandContext,
  name: string,
  created: Run,
  command: RunClusterCommandLine,
  signal: AbortSignal,
): Promise<Outcome> {
  const start = Date.parse(created.metadata.creationTimestamp ?? '') || ctx.now();
  const deadline = command.timeoutMs === undefined ? undefined : ctx.now() + command.timeoutMs;
  let shown: RunPhase | undefined;
  let run = created;
  for (;;) {
    if (signal.aborted) return { kind: 'interrupted' };
    const phase = currentPhase(run);
    if (phase !== shown) {
      ctx.io.stderr.write(`${progressLine(run, phase, ctx.now() - start)}\n`);
      shown = phase;
    }
    const kind = finishKind(phase);
    if (kind !== undefined) {
      return { kind: 'done', code: exitCodeForFinish(kind), summary: summaryLine(name, run, phase) };
    }
    if (run.spec.mode.function !== undefined && waitOutcome(phase, 'ready') === 'satisfied') {
      ctx.io.stdout.write(`run/${name} Ready${run.status?.endpoint === undefined ? '' : ` at ${run.status.endpoint.url}`}\n`);
      return { kind: 'done', code: EXIT.ok };
    }
    const remaining = deadline === undefined ? WATCH_SLICE_MS : Math.min(WATCH_SLICE_MS, deadline - ctx.now());
    if (remaining <= 0) {
      throw new CliError(
        EXIT.unavailable,
        `timed out after ${String(command.timeoutMs)} ms waiting for Run "${name}" (phase ${phase}); it goes on`,
      );
    }
    const change = ctx.runs.nextChange(name, run.metadata.resourceVersion ?? '', remaining, signal);
    const how = await Promise.race([change, abortOf(signal)]);
    if (how === 'aborted') return { kind: 'interrupted' };
    if (how === 'ended') await Promise.race([new Promise((resolve) => setTimeout(resolve, REWATCH_PAUSE_MS)), abortOf(signal)]);
    run = await ctx.runs.get(name);
  }
}

/** Once the Run has a Pod, its output until it ends (or Ctrl-C). */
async function followOutput(ctx: CommandContext, name: string, uid: string, signal: AbortSignal): Promise<void> {
  const logs = new RuntimedLogs(ctx.kubeConfig, ctx.runs.namespace);
  for (;;) {
    if (signal.aborted) return;
    const run = await ctx.runs.get(name);
    const pod = run.status?.assignedPod;
    if (pod !== undefined && pod !== '') {
      await followRunLogs(ctx, name, logs, pod, { uid }, { shown: new ShownRecords(), writer: new RecordWriter(ctx.io) }, signal);
      return;
    }
    if (finishKind(currentPhase(run)) !== undefined) return;
    await Promise.race([new Promise((resolve) => setTimeout(resolve, 250)), abortOf(signal)]);
  }
}

/**
 * On a terminal, asks whether to cancel the Run (it goes on unless the answer is yes; a
 * second Ctrl-C or the end of the input at the prompt is a no); without one, no question:
 * the Run goes on. 130 either way.
 */
async function askToCancel(ctx: CommandContext, name: string): Promise<ExitCode> {
  if (process.stdin.isTTY && (await confirmed(`\ncancel run/${name}? [y/N] `))) {
    await ctx.runs.patch(name, { spec: { cancelRequested: true } });
    ctx.io.stderr.write(`run/${name} cancel requested\n`);
    return EXIT.interrupted;
  }
  ctx.io.stderr.write(`run/${name} goes on (krt cancel ${name} stops it)\n`);
  return EXIT.interrupted;
}

function abortOf(signal: AbortSignal): Promise<'aborted'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('aborted');
    else
      signal.addEventListener(
        'abort',
        () => {
          resolve('aborted');
        },
        { once: true },
      );
  });
}

async function readManifest(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError(EXIT.usage, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { cause: error });
  }
}

async function readAll(input: AsyncIterable<Buffer | string>): Promise<string> {
  let text = '';
  for await (const chunk of input) text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
  return text;
}
