import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { durationFromMillis } from '@kruntimes/proto';
import {
  executeToEnd,
  executionRequest,
  killGroups,
  numberWrittenTo,
  runtimeServerTempDirs,
  runtimeServerTempDirsAfterWait,
  startServerProcess,
  survivingGroupMembers,
} from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
/** How long a killed group may take to be gone, and how often /proc is read meanwhile (a full scan each). */
const GONE_MS = 10_000;
const GONE_POLL_MS = 250;

// A Runtime Server killed with SIGKILL (out of memory, a crash): none of its code runs
// after, yet nothing it started or made outlives it (issue 45): neither a task's or an
// invocation's process group nor a temporary directory.
describe('a bash Runtime Server killed with SIGKILL', () => {
  let tmp: string;
  let workdir: string;
  let server: ServerProcess | undefined;
  let pgid = 0;

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rs-tmp-'));
    workdir = mkdtempSync(join(tmpdir(), 'rs-work-'));
    // The leader and a child of its own in the group: the whole group must go.
    writeFileSync(join(workdir, 'slow.sh'), 'echo $$ > "$PID_FILE"\nsleep 300 &\nsleep 300\n');
    writeFileSync(
      join(workdir, 'main.sh'),
      'slow() { echo $$ > "$PID_FILE"; sleep 300 & sleep 300; }\nkiller() { echo $$ > "$PID_FILE"; kill -9 "$PPID"; sleep 300; }\n',
    );
    pgid = 0;
  });

  afterEach(async () => {
    killGroups([pgid]);
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
    rmSync(workdir, { recursive: true, force: true });
  });

  it('during a task: the task group goes, and its sandbox and krt-bin-* are removed', async () => {
    const pidFile = join(workdir, 'task.pid');
    const started = await startServerProcess(MAIN, { TMPDIR: tmp });
    server = started;
    const request = executionRequest({ workdir, entrypoint: 'slow.sh', extra: { env: { PID_FILE: pidFile } } });
    // Broken by the kill: what it carried does not matter here.
    const stream = executeToEnd(started.client, request).catch(() => undefined);
    pgid = await numberWrittenTo(pidFile);
    expect(
      runtimeServerTempDirs(tmp)
        .map((name) => name.replace(/[^-/]*$/, ''))
        .sort(),
    ).toEqual(['krt-bin-', 'krt-runs-', 'krt-runs/exec-']);
    expect((await survivingGroupMembers(pgid, 0)).length).toBeGreaterThan(0);

    started.child.kill('SIGKILL');
    await stream;
    expect(await survivingGroupMembers(pgid, GONE_MS, GONE_POLL_MS)).toEqual([]);
    expect(await runtimeServerTempDirsAfterWait(tmp)).toEqual([]);
  });

  it('during a function invocation: its group goes, and its sandbox and krt-bin-* are removed', async () => {
    const pidFile = join(workdir, 'invocation.pid');
    const started = await startServerProcess(MAIN, { TMPDIR: tmp });
    server = started;
    const { registrationId } = await started.client.registerFunction({
      runUid: randomUUID(),
      attempt: 1,
      workdir,
      handler: 'slow',
      env: { PID_FILE: pidFile },
    });
    const invocation = started.client
      .invokeFunction({ registrationId, invocationId: randomUUID(), payload: Buffer.from('null'), timeout: durationFromMillis(300_000) })
      .catch(() => undefined);
    pgid = await numberWrittenTo(pidFile);
    expect(
      runtimeServerTempDirs(tmp)
        .map((name) => name.replace(/[^-/]*$/, ''))
        .sort(),
    ).toEqual(['krt-bin-', 'krt-runs-', 'krt-runs/fn-']);

    started.child.kill('SIGKILL');
    await invocation;
    expect(await survivingGroupMembers(pgid, GONE_MS, GONE_POLL_MS)).toEqual([]);
    expect(await runtimeServerTempDirsAfterWait(tmp)).toEqual([]);
  });

  // The handler kills the server as soon as it runs: it runs only once the guard knows its
  // group (the runner's gate), so the group still goes with the server.
  it('killed by the handler itself at once: its group goes, and its sandbox and krt-bin-* are removed', async () => {
    const pidFile = join(workdir, 'invocation.pid');
    const started = await startServerProcess(MAIN, { TMPDIR: tmp });
    server = started;
    const { registrationId } = await started.client.registerFunction({
      runUid: randomUUID(),
      attempt: 1,
      workdir,
      handler: 'killer',
      env: { PID_FILE: pidFile },
    });
    await started.client
      .invokeFunction({ registrationId, invocationId: randomUUID(), payload: Buffer.from('null'), timeout: durationFromMillis(300_000) })
      .catch(() => undefined);
    pgid = await numberWrittenTo(pidFile);
    expect(await survivingGroupMembers(pgid, GONE_MS, GONE_POLL_MS)).toEqual([]);
    expect(await runtimeServerTempDirsAfterWait(tmp)).toEqual([]);
  });
});
