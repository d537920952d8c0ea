import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { executeToEnd, executionRequest, runtimeServerTempDirs, startServerProcess, waitFor } from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');

// A Runtime Server with a TMPDIR of its own: each of its temporary directories is gone
// when its owner ends (an execution, the server process), however it ends.
describe('the temporary directories of a Runtime Server', () => {
  let tmp: string;
  let workdir: string;
  let server: ServerProcess | undefined;

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rs-tmp-'));
    workdir = mkdtempSync(join(tmpdir(), 'rs-work-'));
    writeFileSync(join(workdir, 'task.sh'), 'echo done\nprintf \'{"a":"1"}\' > "$KRT_OUTPUTS_FILE"\n');
    writeFileSync(join(workdir, 'slow.sh'), 'echo started\nsleep 60\n');
  });

  afterEach(async () => {
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
    rmSync(workdir, { recursive: true, force: true });
  });

  it('an execution removes its sandbox at its end; the server its krt-bin-* at its exit', async () => {
    server = await startServerProcess(MAIN, { TMPDIR: tmp });
    expect(
      runtimeServerTempDirs(tmp)
        .map((name) => name.replace(/[^-/]*$/, ''))
        .sort(),
    ).toEqual(['krt-bin-', 'krt-runs-']);
    const transcript = await executeToEnd(server.client, executionRequest({ workdir, entrypoint: 'task.sh' }));
    expect(transcript.exited?.outputs).toEqual({ a: '1' });
    expect(runtimeServerTempDirs(tmp).filter((name) => name.startsWith('krt-runs/exec-'))).toEqual([]);
    await server.stop();
    expect(runtimeServerTempDirs(tmp)).toEqual([]);
  });

  it('an execution running when the server is stopped (SIGTERM) leaves nothing either', async () => {
    server = await startServerProcess(MAIN, { TMPDIR: tmp });
    const running = executeToEnd(server.client, executionRequest({ workdir, entrypoint: 'slow.sh' })).catch(() => undefined);
    await waitFor(
      'the execution running',
      async () => {
        await Promise.resolve();
        return runtimeServerTempDirs(tmp).some((name) => name.startsWith('krt-runs/exec-')) ? true : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    await server.stop();
    await running;
    expect(runtimeServerTempDirs(tmp)).toEqual([]);
  });

  it('an execution whose client goes away removes its sandbox once it is stopped', async () => {
    server = await startServerProcess(MAIN, { TMPDIR: tmp });
    const leaving = new AbortController();
    const stream = server.client.execute(executionRequest({ workdir, entrypoint: 'slow.sh' }), { signal: leaving.signal });
    for await (const { event } of stream) {
      if (event?.$case === 'log') break;
    }
    expect(runtimeServerTempDirs(tmp).filter((name) => name.startsWith('krt-runs/exec-'))).toHaveLength(1);
    leaving.abort();
    await waitFor(
      'the sandbox removed',
      async () => {
        await Promise.resolve();
        return runtimeServerTempDirs(tmp).some((name) => name.startsWith('krt-runs/exec-')) ? undefined : true;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(
      runtimeServerTempDirs(tmp)
        .map((name) => name.replace(/[^-/]*$/, ''))
        .sort(),
    ).toEqual(['krt-bin-', 'krt-runs-']);
  });
});
