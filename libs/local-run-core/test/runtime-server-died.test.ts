// krt run --local with the real bash Runtime Server, which dies (SIGKILL) during the task:
// the run ends as the cluster ends it when a Runtime Server dies under runtimed.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { survivingGroupMembers } from '@kruntimes/testing';
import { pino } from 'pino';
import { executeLocally } from '../src/local-run.ts';

const BASH_SERVER = join(import.meta.dirname, '..', '..', '..', 'apps', 'runtime-server-bash', 'src', 'main.ts');

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'local-run-died-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a Runtime Server killed with SIGKILL during a task that is not retrySafe: Interrupted, RuntimeServerLost (not OwnerLost: krt is there)', async () => {
  // The task's parent is the Runtime Server: it kills it, then waits to be ended with it.
  const pidFile = join(dir, 'task.pid');
  const source = `echo $$ > ${pidFile}\nkill -9 "$PPID"\nsleep 60\n`;
  const status = await executeLocally({
    runFile: {
      name: 'dies',
      namespace: undefined,
      spec: { runtime: 'bash', source: { inline: source }, mode: { task: {} }, timeout: '50s' },
    },
    language: 'bash',
    source,
    runId: 'r1',
    runDir: dir,
    runtimeServer: { node: process.execPath, main: BASH_SERVER },
    logger: pino({ level: 'silent' }),
  });
  expect(status).toMatchObject({ phase: 'Interrupted', reason: 'RuntimeServerLost', attempt: 1 });
  expect(status.message).toContain('the Runtime Server died during the execution');
  // Its guard ended the task's group with the Runtime Server (bounded wait; /proc read each 250 ms).
  const pgid = Number((await readFile(pidFile, 'utf8')).trim());
  expect(await survivingGroupMembers(pgid, 10_000, 250)).toEqual([]);
}, 60_000);
