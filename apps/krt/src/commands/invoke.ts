import { readFile } from 'node:fs/promises';
import { BOUNDS, CONDITION_TYPES, runModeKind } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { acceptsInvokes, currentPhase, isConditionTrue } from '@kruntimes/run-state';
import { invokeFunction } from '@kruntimes/sdk';
import type { Command, InvokeInput } from '../args.ts';
import { CliError, EXIT, usageError } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { bearerToken } from '../kube.ts';
import type { CliIo, CommandContext } from './context.ts';

/** Sent when no payload is given: handlers commonly read fields of their event. */
export const DEFAULT_PAYLOAD = Buffer.from('{}');

/**
 * The payload bytes of `krt invoke`: --data (checked to be JSON here, so that a typo is a
 * usage error), -f FILE, or - (stdin); the SDK checks size and JSON before sending.
 */
export async function readPayload(
  input: InvokeInput,
  io: Pick<CliIo, 'stdin'>,
  read: (path: string) => Promise<Buffer> = readFile,
): Promise<Buffer> {
  switch (input.kind) {
    case 'none':
      return DEFAULT_PAYLOAD;
    case 'data':
      try {
        JSON.parse(input.json);
      } catch (error) {
        throw usageError(`--data is not JSON: ${(error as Error).message}`);
      }
      return Buffer.from(input.json);
    case 'file':
      try {
        return await read(input.path);
      } catch (error) {
        throw usageError(`cannot read ${input.path}: ${(error as Error).message}`);
      }
    case 'stdin': {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of io.stdin) {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        size += bytes.length;
        // One byte over the bound is enough for the SDK to refuse it; stop reading there.
        if (size > BOUNDS.requestBodyBytes) {
          chunks.push(bytes.subarray(0, bytes.length - (size - BOUNDS.requestBodyBytes - 1)));
          break;
        }
        chunks.push(bytes);
      }
      return Buffer.concat(chunks);
    }
  }
}

/**
 * The endpoint URL with its origin replaced by --gateway: the path (namespace, Runtime,
 * Run UID) always comes from the Run, only where the gateway is reached changes.
 */
export function viaGateway(endpointUrl: string, gatewayOrigin: string | undefined): string {
  if (gatewayOrigin === undefined) return endpointUrl;
  let endpoint: URL;
  try {
    endpoint = new URL(endpointUrl);
  } catch {
    throw new CliError(EXIT.unavailable, `the Run's endpoint URL is not a URL`);
  }
  return `${gatewayOrigin}${endpoint.pathname}${endpoint.search}`;
}

/** Why the Run cannot be invoked now, or undefined when it can. */
export function notInvocable(run: Run): { exitCode: ExitCode; message: string } | undefined {
  const name = run.metadata.name ?? '';
  if (runModeKind(run.spec) === 'task')
    return { exitCode: EXIT.usage, message: `Run "${name}" is a task Run; only function Runs can be invoked` };
  const phase = currentPhase(run);
  const ready = isConditionTrue(run.status?.conditions, CONDITION_TYPES.ready);
  if (!acceptsInvokes(phase, ready, run.metadata.deletionTimestamp !== undefined) || run.status?.endpoint === undefined) {
    const reason = run.status?.reason === undefined ? '' : `, ${run.status.reason}`;
    return {
      exitCode: EXIT.unavailable,
      message: `Run "${name}" does not accept invocations now (phase ${phase}${reason}); see krt wait ${name} --for ready`,
    };
  }
  return undefined;
}

/**
 * Invokes a Ready function Run through the gateway with the kubeconfig user's own token:
 * the result JSON on stdout, everything else (invocation ID, attempt, outputs, the
 * function's captured stdout/stderr) on stderr. No retry (see libs/sdk).
 */
export async function invokeCommand(ctx: CommandContext, command: Extract<Command, { name: 'invoke' }>): Promise<ExitCode> {
  const payload = await readPayload(command.input, ctx.io);
  // Before any request: a kubeconfig without a bearer token cannot invoke at all.
  const token = await bearerToken(ctx.kubeConfig);
  const run = await ctx.runs.get(command.run);
  const refusal = notInvocable(run);
  if (refusal !== undefined) throw new CliError(refusal.exitCode, refusal.message);
  const endpoint = run.status?.endpoint;
  if (endpoint === undefined) throw new CliError(EXIT.unavailable, `Run "${command.run}" has no endpoint`);
  let caBundle = endpoint.caBundle;
  if (command.gatewayCaFile !== undefined) {
    const path = command.gatewayCaFile;
    caBundle = (
      await readFile(path).catch((error: unknown) => {
        throw usageError(`cannot read --gateway-ca ${path}: ${(error as Error).message}`);
      })
    ).toString('base64');
  }
  const answer = await invokeFunction({
    url: viaGateway(endpoint.url, command.gateway),
    caBundle,
    token,
    payload,
    invocationId: command.invocationId,
    timeoutMs: command.timeoutMs,
  });
  ctx.io.stderr.write(`invocation ${answer.invocationId} (attempt ${answer.attempt}) ok\n`);
  if (Object.keys(answer.outputs).length > 0) ctx.io.stderr.write(`outputs: ${JSON.stringify(answer.outputs)}\n`);
  if (answer.stdout !== undefined && answer.stdout !== '') ctx.io.stderr.write(prefixed('stdout', answer.stdout));
  if (answer.stderr !== undefined && answer.stderr !== '') ctx.io.stderr.write(prefixed('stderr', answer.stderr));
  ctx.io.stdout.write(`${JSON.stringify(answer.result)}\n`);
  return EXIT.ok;
}

function prefixed(stream: string, text: string): string {
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => `[function ${stream}] ${line}\n`)
    .join('');
}
