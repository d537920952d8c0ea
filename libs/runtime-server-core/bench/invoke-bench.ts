/**
 * Benchmark (not a test): latency and throughput of an empty handler through the real
 * gRPC API of a Runtime Server started as a child process.
 *   node libs/runtime-server-core/bench/invoke-bench.ts python|bash [invocations]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { formatLatencies, summarizeLatencies } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';

const language = process.argv[2] === 'bash' ? 'bash' : 'python';
const count = Number(process.argv[3] ?? (language === 'python' ? 2000 : 300));
const root = join(import.meta.dirname, '..', '..', '..');
const workdir = mkdtempSync(join(tmpdir(), 'krt-bench-'));
writeFileSync(join(workdir, 'main.py'), 'def handler(event, context):\n    return None\n');
writeFileSync(join(workdir, 'main.sh'), 'handler() { :; }\n');

const child = spawn(process.execPath, [join(root, 'apps', `runtime-server-${language}`, 'src', 'main.ts'), '--listen', '127.0.0.1:0'], {
  // Info logging stays on: it is part of what a real invocation costs.
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('server did not start'));
    }, 20_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'runtime server listening' && entry.port !== undefined) {
        clearTimeout(timer);
        resolve(entry.port);
      }
    });
  });
  const channel = createChannel(`127.0.0.1:${port}`);
  const client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
  const { registrationId } = await client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'handler', env: {} });
  const request = { registrationId, payload: Buffer.from('{}'), timeout: durationFromMillis(10_000) };
  for (let i = 0; i < Math.min(50, count); i += 1) await client.invokeFunction({ ...request, invocationId: `warm-${i}` });
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i += 1) {
    const t0 = performance.now();
    await client.invokeFunction({ ...request, invocationId: `bench-${i}` });
    latencies.push(performance.now() - t0);
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${language}: ${count} sequential invocations of an empty handler: ${formatLatencies(summarizeLatencies(latencies))}, ${(count / seconds).toFixed(0)} invocations/s`,
  );
  channel.close();
} finally {
  child.kill('SIGTERM');
  rmSync(workdir, { recursive: true, force: true });
}
