import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { ApiException } from '@kubernetes/client-node';
import { RUN_INPUT_CONDITION_TYPES, RUN_INPUT_REASONS } from '@kruntimes/api';
import type { RunInput } from '@kruntimes/api';
import { isDecided, runInputName } from '@kruntimes/input-core';
import type { Command, RespondInput } from '../args.ts';
import { CliError, EXIT, apiStatusMessage, usageError } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { RunInputApi } from '../run-input-api.ts';
import type { CliIo, CommandContext } from './context.ts';

type RespondCommand = Extract<Command, { name: 'respond' }>;

/** Pause after a watch that could not start or closed early, so that the loop cannot spin. */
const REWATCH_PAUSE_MS = 1000;

/**
 * Answers a Run waiting for input: creates the RunInput `runInputName(run, id)` (the API
 * server checks the caller's RBAC create on runinputs), then waits at most
 * `--wait-timeout` for the controller-manager's decision and prints it. The same ID again
 * finds the same RunInput: with the same data that is the same response (its decision is
 * printed again), with other data an error.
 */
export async function respondCommand(ctx: CommandContext, command: RespondCommand): Promise<ExitCode> {
  const data = await readResponse(command.input, ctx.io);
  const inputs = new RunInputApi(ctx.kubeConfig, ctx.runs.namespace);
  const name = runInputName(command.run, command.responseId);
  const body: RunInput = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunInput',
    metadata: { name },
    spec: { runName: command.run, responseId: command.responseId, data },
  };
  const created = await create(inputs, body);
  if (created === undefined) {
    const existing = await read(inputs, name);
    if (!sameResponse(existing, body)) {
      throw usageError(
        `RunInput ${name} exists with another response for Run "${command.run}" and ID "${command.responseId}": a response is immutable; use another --id`,
      );
    }
    ctx.io.stderr.write(`runinput/${name} exists with the same response (unchanged)\n`);
  }
  const decided = await waitForDecision(ctx, inputs, name, command.waitTimeoutMs);
  const outcome = respondOutcome(decided);
  if (outcome.exitCode !== EXIT.ok) throw new CliError(outcome.exitCode, outcome.line);
  ctx.io.stdout.write(`${outcome.line}\n`);
  return EXIT.ok;
}

/** What `krt respond` prints for a decided RunInput, and its exit code. */
export function respondOutcome(input: RunInput): { exitCode: ExitCode; line: string } {
  const accepted = input.status?.conditions?.find((condition) => condition.type === RUN_INPUT_CONDITION_TYPES.accepted);
  const attempt = String(input.status?.attempt ?? '?');
  if (accepted?.status === 'True') {
    return accepted.reason === RUN_INPUT_REASONS.duplicateResponse
      ? { exitCode: EXIT.ok, line: `already accepted (${RUN_INPUT_REASONS.duplicateResponse}): attempt ${attempt}` }
      : { exitCode: EXIT.ok, line: `accepted: attempt ${attempt} continues` };
  }
  const reason = accepted?.reason ?? 'Unknown';
  return { exitCode: refusalExitCode(reason), line: `refused (${reason}): ${accepted?.message ?? ''}` };
}

/**
 * A refusal's exit code (krt's table): a response the schema or the bounds refuse is the
 * caller's input (2); no such Run is 3; a Run not waiting (yet, or any more) is 5.
 */
export function refusalExitCode(reason: string): ExitCode {
  switch (reason) {
    case RUN_INPUT_REASONS.inputInvalid:
    case RUN_INPUT_REASONS.inputTooLarge:
      return EXIT.usage;
    case RUN_INPUT_REASONS.runNotFound:
      return EXIT.notFound;
    default:
      return EXIT.unavailable;
  }
}

/** The existing RunInput carries this very response (the same Run, ID and data as JSON keeps them). */
export function sameResponse(existing: RunInput, wanted: RunInput): boolean {
  return (
    existing.spec.runName === wanted.spec.runName &&
    existing.spec.responseId === wanted.spec.responseId &&
    isDeepStrictEqual(JSON.parse(JSON.stringify(existing.spec.data ?? null)), JSON.parse(JSON.stringify(wanted.spec.data ?? null)))
  );
}

/** The response's data: JSON from --data, --data-file FILE or stdin; anything else is a usage error. */
export async function readResponse(input: RespondInput, io: Pick<CliIo, 'stdin'>): Promise<unknown> {
  let text: string;
  let from: string;
  switch (input.kind) {
    case 'data':
      text = input.json;
      from = '--data';
      break;
    case 'file':
      from = input.path;
      try {
        text = await readFile(input.path, 'utf8');
      } catch (error) {
        throw usageError(`cannot read --data-file ${input.path}: ${(error as Error).message}`);
      }
      break;
    case 'stdin': {
      from = 'stdin';
      const chunks: string[] = [];
      for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      text = chunks.join('');
      break;
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw usageError(`the response (${from}) is not JSON: ${(error as Error).message}`);
  }
}

async function create(inputs: RunInputApi, body: RunInput): Promise<RunInput | undefined> {
  try {
    return await inputs.create(body);
  } catch (error) {
    if (error instanceof ApiException && error.code === 403) {
      throw new CliError(
        EXIT.unauthorized,
        `forbidden: responding needs RBAC create on runinputs.kruntimes.io in namespace "${inputs.namespace}" (${apiStatusMessage(error)})`,
        { cause: error },
      );
    }
    if (error instanceof ApiException && error.code === 404) {
      throw new CliError(
        EXIT.notFound,
        `namespace "${inputs.namespace}" not found, or RunInputs are not installed (${apiStatusMessage(error)})`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
}

async function read(inputs: RunInputApi, name: string): Promise<RunInput> {
  try {
    return await inputs.get(name);
  } catch (error) {
    if (error instanceof ApiException && error.code === 403) {
      throw new CliError(
        EXIT.unauthorized,
        `runinput/${name} was created, but reading its decision was refused: it needs get and watch on runinputs (${apiStatusMessage(error)})`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** The RunInput once the controller-manager decided it, bounded by the timeout (exit 5). */
async function waitForDecision(ctx: CommandContext, inputs: RunInputApi, name: string, timeoutMs: number): Promise<RunInput> {
  const deadline = ctx.now() + timeoutMs;
  for (;;) {
    const input = await read(inputs, name);
    if (isDecided(input)) return input;
    const remaining = deadline - ctx.now();
    if (remaining <= 0) {
      throw new CliError(
        EXIT.unavailable,
        `runinput/${name} created, but not decided within ${String(timeoutMs)} ms (is the controller-manager running?); run krt respond again with the same --id to see its decision`,
      );
    }
    const how = await inputs.nextChange(name, input.metadata.resourceVersion ?? '', remaining);
    if (how === 'ended') await sleep(Math.min(REWATCH_PAUSE_MS, Math.max(0, deadline - ctx.now())));
  }
}
