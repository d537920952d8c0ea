import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { artifactObjectKey } from '@kruntimes/api';
import { writeBoundedFile } from '@kruntimes/host';
import type { ArtifactRecord, Run } from '@kruntimes/api';
import { ArtifactObjects, resolveArtifactStore } from '@kruntimes/artifacts-core';
import { kruntimesClients } from '@kruntimes/run-client';
import { currentPhase } from '@kruntimes/run-state';
import type { ArtifactsCommandLine } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import type { ExitCode } from '../exit-codes.ts';
import { formatArtifacts } from '../output.ts';
import type { CliIo, CommandContext } from './context.ts';

export async function artifactsCommand(ctx: CommandContext, command: ArtifactsCommandLine): Promise<ExitCode> {
  const run = await ctx.runs.get(command.run);
  const records = run.status?.artifacts ?? [];
  if (!('get' in command)) {
    if (command.output === 'json') {
      ctx.io.stdout.write(`${JSON.stringify(records, null, 2)}\n`);
    } else if (records.length === 0) {
      ctx.io.stderr.write(`Run ${command.run} has no artifacts${noArtifactsBecause(run)}.\n`);
    } else {
      ctx.io.stdout.write(formatArtifacts(records));
    }
    return EXIT.ok;
  }
  const record = records.find((candidate) => candidate.id === command.get.id);
  if (record === undefined) {
    const known = records.length === 0 ? `it has none${noArtifactsBecause(run)}` : `its artifacts: ${records.map((r) => r.id).join(', ')}`;
    throw new CliError(EXIT.notFound, `Run ${command.run} has no artifact "${command.get.id}" (${known})`);
  }
  await download(ctx, run, record, command.get.to);
  return EXIT.ok;
}

function noArtifactsBecause(run: Run): string {
  const phase = currentPhase(run);
  if (run.spec.artifacts === undefined) return ' (it declares none)';
  return phase === 'Succeeded' ? '' : ` (it is ${phase}: artifacts are recorded when it succeeds)`;
}

/**
 * Downloads the object of the Run's succeeded attempt into a temp file (next to the
 * destination, so that the rename is atomic; in the OS temp dir for stdout), verifies its
 * size and sha256 against status.artifacts, and only then renames it into place or copies
 * it to stdout. The body is bounded by the recorded size: a longer object is refused as
 * soon as it passes it.
 */
async function download(ctx: CommandContext, run: Run, record: ArtifactRecord, to: string): Promise<void> {
  const namespace = ctx.runs.namespace;
  const storeName = run.spec.artifacts?.store;
  const uid = run.metadata.uid;
  const attempt = run.status?.attempt;
  if (storeName === undefined || uid === undefined || attempt === undefined) {
    throw new CliError(EXIT.unavailable, `Run ${run.metadata.name ?? ''} records artifacts but names no store, UID or attempt`);
  }
  // With the user's own credentials: they need get on the ArtifactStore and on its Secret.
  const resolved = await resolveArtifactStore(
    ctx.kubeConfig.makeApiClient(CoreV1Api),
    kruntimesClients(ctx.kubeConfig).artifactStores,
    namespace,
    storeName,
  );
  const key = artifactObjectKey(resolved.location.prefix, namespace, uid, attempt, record.id);
  const objects = new ArtifactObjects(resolved.location, resolved.credentials);
  const toStdout = to === '-';
  const tempDir = toStdout ? await mkdtemp(join(tmpdir(), 'krt-artifact-')) : undefined;
  const destination = resolve(to);
  const temp =
    tempDir === undefined
      ? join(dirname(destination), `.${basename(destination)}.krt-${randomBytes(6).toString('hex')}.tmp`)
      : join(tempDir, 'body');
  let renamed = false;
  try {
    const body = await objects.download(key);
    if (body === undefined) throw new CliError(EXIT.notFound, `the object of artifact "${record.id}" is not in the store (${key})`);
    const stored = await writeBoundedFile(body, temp, record.size).finally(() => body.destroy());
    const digest = `sha256:${stored.sha256Hex}`;
    if (stored.size !== record.size || digest !== record.digest) {
      throw new CliError(
        EXIT.unavailable,
        `artifact "${record.id}" does not match its record: the store has ${stored.size > record.size ? `more than ${String(record.size)}` : String(stored.size)} bytes` +
          `${stored.size > record.size ? '' : ` with ${digest}`}, status.artifacts says ${String(record.size)} bytes with ${record.digest}; nothing was written`,
      );
    }
    if (toStdout) {
      await copyToStdout(temp, ctx.io);
    } else {
      await rename(temp, destination);
      renamed = true;
      ctx.io.stderr.write(`${record.id}: ${String(record.size)} bytes, ${record.digest} verified -> ${to}\n`);
    }
  } finally {
    objects.destroy();
    if (!renamed) await rm(temp, { force: true });
    if (tempDir !== undefined) await rm(tempDir, { recursive: true, force: true });
  }
}

async function copyToStdout(path: string, io: CliIo): Promise<void> {
  const stdout = io.stdout as CliIo['stdout'] & { once?: unknown };
  for await (const chunk of createReadStream(path)) {
    const accepted = stdout.write(chunk as Buffer);
    // A pipe to a slow reader: wait for it rather than buffer the whole file in memory.
    if (accepted === false && typeof stdout.once === 'function') await once(stdout as NodeJS.WritableStream, 'drain');
  }
}
