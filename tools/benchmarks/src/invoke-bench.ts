/**
 * Benchmark (not a test): latency and throughput of an empty handler through the real
 * gRPC API of a Runtime Server started as a child process, and the server's memory.
 *   node tools/benchmarks/src/invoke-bench.ts python|bash [invocations] [NODE_OPTIONS variants, '|'-separated]
 *
 * Each variant of the server's NODE_OPTIONS (by default V8's defaults beside what the
 * Runtime Pods give it, so what a flag costs in latency shows beside what it saves) gets
 * its own server; the invocations run in rounds that alternate between them, so a busy
 * moment of the machine falls on both. After the run: each server's RSS, its anonymous
 * part and its peak (VmRSS, RssAnon, VmHWM of /proc/<pid>/status). The server runs from its
 * TypeScript sources; KRT_E2E_ENTRYPOINTS=bundle runs its bundled build (as the image ships
 * it; `npx nx run runtime-server-python:bundle` first).
 */
import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import type { runtimeServerV1 as Types } from '@kruntimes/proto';
import { formatLatencies, summarizeLatencies } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';

const language = process.argv[2] === 'bash' ? 'bash' : 'python';
const count = Number(process.argv[3] ?? (language === 'python' ? 2000 : 300));
const variants = (process.argv[4] ?? '|--max-semi-space-size=1').split('|').map((options) => options.trim());
const ROUNDS = 4;
const root = join(import.meta.dirname, '..', '..', '..');
const workdir = mkdtempSync(join(tmpdir(), 'krt-bench-'));
writeFileSync(join(workdir, 'main.py'), 'def handler(event, context):\n    return None\n');
writeFileSync(join(workdir, 'main.sh'), 'handler() { :; }\n');

interface Server {
  options: string;
  child: ChildProcessByStdio<null, Readable, null>;
  channel: Channel;
  client: Client<typeof runtimeServerV1.RuntimeServerDefinition>;
  request: Omit<Types.InvokeFunctionRequest, 'invocationId'>;
  latencies: number[];
  ms: number;
}

async function start(options: string): Promise<Server> {
  const entrypoint =
    process.env.KRT_E2E_ENTRYPOINTS === 'bundle'
      ? join(root, 'dist', 'bundle', 'apps', `runtime-server-${language}`, 'main.mjs')
      : join(root, 'apps', `runtime-server-${language}`, 'src', 'main.ts');
  const child = spawn(process.execPath, [entrypoint, '--listen', '127.0.0.1:0'], {
    // Info logging stays on: it is part of what a real invocation costs.
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: options },
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`server (NODE_OPTIONS ${options}) did not start`));
    }, 20_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'runtime server listening' && entry.port !== undefined) {
        clearTimeout(timer);
        resolve(entry.port);
      }
    });
  });
  const channel = createChannel(`127.0.0.1:${String(port)}`);
  const client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
  const { registrationId } = await client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'handler', env: {} });
  const request = { registrationId, payload: Buffer.from('{}'), timeout: durationFromMillis(10_000) };
  for (let i = 0; i < Math.min(50, count); i += 1) await client.invokeFunction({ ...request, invocationId: `warm-${String(i)}` });
  return { options, child, channel, client, request, latencies: [], ms: 0 };
}

function statusMb(pid: number | undefined, field: string): string {
  const status = readFileSync(`/proc/${String(pid)}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return (kb / 1024).toFixed(1);
}

const servers: Server[] = [];
try {
  for (const options of variants) servers.push(await start(options));
  const perRound = Math.ceil(count / ROUNDS);
  for (let round = 0; round < ROUNDS; round += 1) {
    // The order rotates, so no variant always runs first.
    for (let k = 0; k < servers.length; k += 1) {
      const server = servers[(round + k) % servers.length];
      if (server === undefined) continue;
      const started = performance.now();
      for (let i = 0; i < perRound; i += 1) {
        const t0 = performance.now();
        await server.client.invokeFunction({ ...server.request, invocationId: `bench-${String(round)}-${String(i)}` });
        server.latencies.push(performance.now() - t0);
      }
      server.ms += performance.now() - started;
    }
  }
  const build = process.env.KRT_E2E_ENTRYPOINTS === 'bundle' ? 'bundled build' : 'TypeScript sources';
  console.log(
    `${language} (${build}): ${String(perRound * ROUNDS)} sequential invocations of an empty handler per server, ${String(ROUNDS)} alternating rounds`,
  );
  for (const server of servers) {
    const pid = server.child.pid;
    console.log(
      `  NODE_OPTIONS "${server.options}": ${formatLatencies(summarizeLatencies(server.latencies))}, ` +
        `${((server.latencies.length / server.ms) * 1000).toFixed(0)} invocations/s; ` +
        `server RSS ${statusMb(pid, 'VmRSS')} MB (anonymous ${statusMb(pid, 'RssAnon')}), peak ${statusMb(pid, 'VmHWM')} MB`,
    );
  }
} finally {
  for (const server of servers) {
    server.channel.close();
    // SIGINT stops at once; SIGTERM would serve on until the bench's registration is gone (a Pod's drain).
    server.child.kill('SIGINT');
  }
  rmSync(workdir, { recursive: true, force: true });
}
