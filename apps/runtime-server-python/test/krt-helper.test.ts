import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { durationFromMillis } from '@kruntimes/proto';
import { executeToEnd, startServerProcess } from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const execFileAsync = promisify(execFile);

const TASK = `
import krt, mine
print(krt.idempotency_key("charge"), krt.attempt(), mine.NAME)
`;

const HANDLERS = `
import krt

def key(event, context):
    return {"key": krt.idempotency_key(event), "attempt": krt.attempt()}
`;

describe('krt, the helper module for user code', () => {
  let server: ServerProcess;
  let workdir: string;
  let ownLib: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-helper-'));
    ownLib = mkdtempSync(join(tmpdir(), 'krt-helper-lib-'));
    writeFileSync(join(workdir, 'task.py'), TASK);
    writeFileSync(join(workdir, 'handlers.py'), HANDLERS);
    writeFileSync(join(ownLib, 'mine.py'), 'NAME = "own module"\n');
    server = await startServerProcess(MAIN);
  });

  afterAll(async () => {
    await server.stop();
    rmSync(workdir, { recursive: true, force: true });
    rmSync(ownLib, { recursive: true, force: true });
  });

  it('passes its Python unit tests', async () => {
    const { stderr } = await execFileAsync(process.env.KRT_PYTHON ?? 'python3', [join(import.meta.dirname, 'test_krt.py'), '-v'], {
      timeout: 30_000,
    });
    expect(stderr).toMatch(/\nOK\n?$/);
  });

  const taskLine = async (runUid: string, attempt: number): Promise<string> => {
    const { lines, exited } = await executeToEnd(server.client, {
      executionId: `${runUid}/${String(attempt)}`,
      runUid,
      attempt,
      workdir,
      entrypoint: 'task.py',
      args: [],
      env: { PYTHONPATH: ownLib },
    });
    expect(exited?.exitCode).toBe(0);
    return lines.join('\n');
  };

  it('gives a task the same idempotency key in every attempt of one Run, and keeps the Run own PYTHONPATH', async () => {
    const run = randomUUID();
    const [first, second, other] = [await taskLine(run, 1), await taskLine(run, 2), await taskLine(randomUUID(), 1)];
    const key = (line: string) => line.split(' ')[0];
    expect(first).toMatch(/^[0-9a-f]{64} 1 own module$/);
    expect(second).toMatch(/^[0-9a-f]{64} 2 own module$/);
    expect(key(second)).toBe(key(first));
    expect(key(other)).not.toBe(key(first));
  });

  it('is importable by function handlers, with the same key as a task of that Run', async () => {
    const run = randomUUID();
    const { registrationId } = await server.client.registerFunction({ runUid: run, attempt: 2, workdir, handler: 'handlers:key', env: {} });
    const response = await server.client.invokeFunction({
      registrationId,
      invocationId: 'i-1',
      payload: Buffer.from(JSON.stringify('charge')),
      timeout: durationFromMillis(10_000),
    });
    const result = JSON.parse(Buffer.from(response.result).toString('utf8')) as { key: string; attempt: number };
    expect(result.attempt).toBe(2);
    expect(result.key).toBe((await taskLine(run, 1)).split(' ')[0]);
    await server.client.unregisterFunction({ registrationId });
  });
});
