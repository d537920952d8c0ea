import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
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
  waitFor,
} from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const BOUND = { timeoutMs: 20_000, intervalMs: 50 };
/** How long a killed group may take to be gone, and how often /proc is read meanwhile (a full scan each). */
const GONE_MS = 10_000;
const GONE_POLL_MS = 250;

/** The leader and a child of its own in the group: the whole group must go. */
const TASK = `
import os, subprocess, time
subprocess.Popen(["sleep", "300"])
with open(os.environ["PID_FILE"], "w") as f:
    f.write(f"{os.getpgid(0)}\\n")
time.sleep(300)
`;

const HANDLERS = `
import os, subprocess, time

def leave(event, context):
    # A child left running in the worker's group after the invocation returned.
    subprocess.Popen(["sleep", "300"])
    return os.getpgid(0)

def sleep(event, context):
    with open(os.environ["PID_FILE"], "w") as f:
        f.write(f"{os.getpgid(0)}\\n")
    time.sleep(300)
    return "slept"
`;

/** The spare workers (`krt_worker.py --spare`) the process `parent` started: read from /proc, bounded. */
function spareWorkersOf(parent: number): Promise<number[]> {
  return waitFor(
    `a spare worker of ${String(parent)}`,
    async () => {
      const spares: number[] = [];
      for (const entry of await readdir('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid !== parent) continue;
        const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
        if (cmdline.split('\0').includes('--spare')) spares.push(Number(entry));
      }
      return spares.length > 0 ? spares : undefined;
    },
    BOUND,
  );
}

// A Runtime Server killed with SIGKILL (out of memory, a crash): none of its code runs
// after, yet nothing it started or made outlives it (issue 45): neither a task's process
// group nor a function's warm worker (its own group), busy or idle, nor a temporary directory.
describe('a python Runtime Server killed with SIGKILL', () => {
  let tmp: string;
  let workdir: string;
  let server: ServerProcess | undefined;
  let pgids: number[] = [];

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'rs-tmp-'));
    workdir = mkdtempSync(join(tmpdir(), 'rs-work-'));
    writeFileSync(join(workdir, 'slow.py'), TASK);
    writeFileSync(join(workdir, 'handlers.py'), HANDLERS);
    pgids = [];
  });

  afterEach(async () => {
    killGroups(pgids);
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
    rmSync(workdir, { recursive: true, force: true });
  });

  it('during a task: the task group goes, and its sandbox is removed', async () => {
    const pidFile = join(workdir, 'task.pid');
    const started = await startServerProcess(MAIN, { TMPDIR: tmp });
    server = started;
    const request = executionRequest({ workdir, entrypoint: 'slow.py', extra: { env: { PID_FILE: pidFile } } });
    // Broken by the kill: what it carried does not matter here.
    const stream = executeToEnd(started.client, request).catch(() => undefined);
    const pgid = await numberWrittenTo(pidFile);
    pgids.push(pgid);
    expect(
      runtimeServerTempDirs(tmp)
        .map((name) => name.replace(/[^-/]*$/, ''))
        .sort(),
    ).toEqual(['krt-runs-', 'krt-runs/exec-']);

    started.child.kill('SIGKILL');
    await stream;
    expect(await survivingGroupMembers(pgid, GONE_MS, GONE_POLL_MS)).toEqual([]);
    expect(await runtimeServerTempDirsAfterWait(tmp)).toEqual([]);
  });

  it('with warm workers, one idle with a child left running and one in an invocation: both groups go', async () => {
    const pidFile = join(workdir, 'invocation.pid');
    const started = await startServerProcess(MAIN, { TMPDIR: tmp });
    server = started;
    const register = (handler: string) =>
      started.client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler, env: { PID_FILE: pidFile } });
    const invoke = (registrationId: string) =>
      started.client.invokeFunction({
        registrationId,
        invocationId: randomUUID(),
        payload: Buffer.from('null'),
        timeout: durationFromMillis(300_000),
      });
    const idle = await register('handlers:leave');
    const idleGroup = Number(Buffer.from((await invoke(idle.registrationId)).result).toString('utf8'));
    pgids.push(idleGroup);
    const busy = await register('handlers:sleep');
    const invocation = invoke(busy.registrationId).catch(() => undefined);
    const busyGroup = await numberWrittenTo(pidFile);
    pgids.push(busyGroup);
    expect(idleGroup).toBeGreaterThan(1);
    expect(busyGroup).not.toBe(idleGroup);

    started.child.kill('SIGKILL');
    await invocation;
    const [idleLeft, busyLeft] = await Promise.all([
      survivingGroupMembers(idleGroup, GONE_MS, GONE_POLL_MS),
      survivingGroupMembers(busyGroup, GONE_MS, GONE_POLL_MS),
    ]);
    expect({ idleLeft, busyLeft }).toEqual({ idleLeft: [], busyLeft: [] });
  });

  // Not guarded: a spare never assigned holds no work and exits when its requests pipe
  // (fd 3) from the server closes, which the kernel does when the server dies.
  it('with a spare worker never assigned: the spare goes too', async () => {
    const started = await startServerProcess(MAIN, { TMPDIR: tmp, KRT_PYTHON_SPARE_WORKER: '1' });
    server = started;
    const spares = await spareWorkersOf(started.child.pid!);
    // Started detached: each spare leads its own group.
    pgids.push(...spares);
    expect(spares).toHaveLength(1);

    started.child.kill('SIGKILL');
    const left = await Promise.all(spares.map((pgid) => survivingGroupMembers(pgid, GONE_MS, GONE_POLL_MS)));
    expect(left.flat()).toEqual([]);
  });
});
