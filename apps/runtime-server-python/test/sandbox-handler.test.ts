import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BOUNDS } from '@kruntimes/api';
import { durationFromMillis } from '@kruntimes/proto';
import { failure, startServerProcess } from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const PYLIB = join(import.meta.dirname, '..', 'src', 'pylib');
const execFileAsync = promisify(execFile);

describe('kruntimes_sandbox, the sandbox handler shipped with the Python Runtime Server', () => {
  it('passes its Python unit tests', async () => {
    const { stderr } = await execFileAsync(process.env.KRT_PYTHON ?? 'python3', [join(import.meta.dirname, 'test_kruntimes_sandbox.py')], {
      timeout: 60_000,
    });
    expect(stderr).toMatch(/\nOK\n?$/);
  }, 70_000);

  it('uses the invoke contract bounds', async () => {
    const { stdout } = await execFileAsync(
      process.env.KRT_PYTHON ?? 'python3',
      ['-c', 'import kruntimes_sandbox as s; print(s.CAPTURED_STREAM_BYTES, s.RESULT_BYTES)'],
      { env: { ...process.env, PYTHONPATH: PYLIB }, timeout: 30_000 },
    );
    expect(stdout).toBe(`${String(BOUNDS.capturedStreamBytes)} ${String(BOUNDS.resultBytes)}\n`);
  });

  describe('registered as a Run registers it (handler kruntimes_sandbox:handle, inline source that imports it)', () => {
    let server: ServerProcess;
    let workdir: string;

    beforeAll(async () => {
      workdir = mkdtempSync(join(tmpdir(), 'sandbox-handler-'));
      writeFileSync(join(workdir, 'main.py'), 'from kruntimes_sandbox import handle\n');
      server = await startServerProcess(MAIN);
    });

    afterAll(async () => {
      await server.stop();
      rmSync(workdir, { recursive: true, force: true });
    });

    const invoke = (registrationId: string, payload: unknown, timeoutMs = 10_000) =>
      server.client.invokeFunction({
        registrationId,
        invocationId: randomUUID(),
        payload: Buffer.from(JSON.stringify(payload)),
        timeout: durationFromMillis(timeoutMs),
      });
    const resultOf = async (registrationId: string, payload: unknown, timeoutMs?: number): Promise<Record<string, unknown>> =>
      JSON.parse(Buffer.from((await invoke(registrationId, payload, timeoutMs)).result).toString('utf8')) as Record<string, unknown>;

    it('serves the four tools in the workspace; refusals and an overrun are FunctionFailed, and the worker stays', async () => {
      const { registrationId } = await server.client.registerFunction({
        runUid: randomUUID(),
        attempt: 1,
        workdir,
        handler: 'kruntimes_sandbox:handle',
        env: {},
      });
      expect(await resultOf(registrationId, { tool: 'write_file', path: 'data/n.txt', content: '20' })).toEqual({
        path: 'data/n.txt',
        bytes: 2,
      });
      const run = await resultOf(registrationId, {
        tool: 'exec',
        python: 'n = int(open("data/n.txt").read()); open("out.txt", "w").write(str(n + 1)); print("pid-check")',
      });
      expect(run).toMatchObject({ exitCode: 0, stdout: 'pid-check\n', stderr: '' });
      expect(await resultOf(registrationId, { tool: 'read_file', path: 'out.txt' })).toMatchObject({ content: '21' });
      const worker = async (): Promise<unknown> =>
        (await resultOf(registrationId, { tool: 'exec', python: 'import os; print(os.getppid())' })).stdout;
      const workerBefore = await worker();
      const listing = await resultOf(registrationId, { tool: 'list_files', path: '.' });
      expect((listing.entries as { name: string }[]).map((entry) => entry.name)).toEqual(['data', 'main.py', 'out.txt']);

      const escape = await failure((o) =>
        server.client.invokeFunction(
          {
            registrationId,
            invocationId: 'escape',
            payload: Buffer.from('{"tool":"read_file","path":"../x"}'),
            timeout: durationFromMillis(5000),
          },
          o,
        ),
      );
      expect(escape).toMatchObject({ code: 'FunctionFailed', source: 'function' });
      expect(escape.message).toMatch(/\nkruntimes_sandbox\.SandboxError: PathOutsideWorkspace: '\.\.\/x' leaves the workspace\n?$/);

      // The invocation allows 4 s: the command's own limit answers first, the worker is kept.
      const overrun = await failure((o) =>
        server.client.invokeFunction(
          {
            registrationId,
            invocationId: 'overrun',
            payload: Buffer.from(JSON.stringify({ tool: 'exec', command: 'echo before; sleep 60', timeoutSeconds: 1 })),
            timeout: durationFromMillis(4000),
          },
          o,
        ),
      );
      expect(overrun).toMatchObject({ code: 'FunctionFailed', source: 'function' });
      expect(overrun.message).toContain('ExecTimeout: timed out after 1 s');
      expect(overrun.message).toContain('--- stdout (7 bytes) ---\nbefore\n');
      // The same worker (no restart after an invocation timeout): the commands' parent is unchanged.
      expect(await worker()).toBe(workerBefore);

      await server.client.unregisterFunction({ registrationId });
      expect(existsSync(join(workdir, 'out.txt'))).toBe(true);
    }, 60_000);
  });
});
