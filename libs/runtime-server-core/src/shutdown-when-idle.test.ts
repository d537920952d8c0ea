import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KruntimesError } from '@kruntimes/errors';
import { runtimeServerV1 } from '@kruntimes/proto';
import { executeToEnd } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';
import { pino } from 'pino';
import type { LanguageAdapter } from './adapter.ts';
import { startRuntimeServer } from './server.ts';

const { ExitReason } = runtimeServerV1;

const nodeAdapter: LanguageAdapter = {
  language: 'bash',
  prepare() {
    throw new KruntimesError('InvalidRequest', 'no functions in this test');
  },
  register() {
    return Promise.reject(new KruntimesError('InvalidRequest', 'no functions in this test'));
  },
  taskCommand: (entrypoint, args) => ({ command: process.execPath, args: [entrypoint, ...args] }),
};

describe('a Runtime Server asked to stop while runtimed drains the Pod (shutdownWhenIdle)', () => {
  it('lets the running task finish, then shuts down', async () => {
    const workdir = await mkdtemp(join(tmpdir(), 'krt-idle-'));
    await writeFile(join(workdir, 'task.mjs'), "await new Promise((r) => setTimeout(r, 1500)); console.log('finished');\n");
    const server = await startRuntimeServer({ adapter: nodeAdapter, listen: '127.0.0.1:0', logger: pino({ level: 'silent' }) });
    const channel = createChannel(`127.0.0.1:${String(server.port)}`);
    const client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
    try {
      const runUid = randomUUID();
      const running = executeToEnd(client, {
        executionId: `${runUid}/1`,
        runUid,
        attempt: 1,
        workdir,
        entrypoint: 'task.mjs',
        args: [],
        env: {},
      });
      // Asked to stop once the task runs: it is not cut short.
      await new Promise((resolve) => setTimeout(resolve, 300));
      let stopped = false;
      const stopping = server.shutdownWhenIdle().then(() => {
        stopped = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(stopped).toBe(false);
      const { exited, lines } = await running;
      expect(exited).toMatchObject({ reason: ExitReason.EXIT_REASON_COMPLETED, exitCode: 0 });
      expect(lines).toContain('finished');
      await stopping;
      expect(stopped).toBe(true);
    } finally {
      channel.close();
      await server.shutdown();
      await rm(workdir, { recursive: true, force: true });
    }
  });
});
