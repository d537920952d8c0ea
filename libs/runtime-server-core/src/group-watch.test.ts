import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { killGroupUntilGone, groupHasLiveMembers } from './process-group.ts';
import { groupWatcher, watchGroup } from './group-watch.ts';

/** Polls until the group has no live member, false at the bound. */
async function goneWithin(pgid: number, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (!(await groupHasLiveMembers(pgid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** A task group: a leader and a child of its own, both sleeping. */
const taskGroup = () => spawn('sh', ['-c', 'sleep 300 & sleep 300; wait'], { detached: true, stdio: 'ignore' });

describe('watchGroup', () => {
  // A stand-in for the Runtime Server: a process that starts a task group and its watcher
  // (spawned as watchGroup spawns it), then is killed with SIGKILL (none of its code runs then).
  it('kills the task group when the process that watches it dies with SIGKILL', async () => {
    const server = spawn(
      process.execPath,
      [
        '-e',
        `const { spawn } = require('node:child_process');
         const task = spawn('sh', ['-c', 'sleep 300 & sleep 300; wait'], { detached: true, stdio: 'ignore' });
         const watcher = JSON.parse(process.argv[1].replace('PGID', String(task.pid)));
         spawn(watcher.command, watcher.args, watcher.options);
         process.stdout.write(String(task.pid) + '\\n');
         setInterval(() => undefined, 1000);`,
        JSON.stringify(groupWatcher(-1)).replace('"-1"', '"PGID"'),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [line] = (await Promise.race([
      once(server.stdout, 'data'),
      once(server, 'exit').then(() => {
        throw new Error('the stand-in Runtime Server exited before it started the task');
      }),
    ])) as [Buffer];
    const pgid = Number(line.toString().trim());
    expect(line.toString()).toMatch(/^\d+\n$/);
    expect(pgid).toBeGreaterThan(1);
    try {
      expect(await groupHasLiveMembers(pgid)).toBe(true);
      server.kill('SIGKILL');
      expect(await goneWithin(pgid, 5_000)).toBe(true);
    } finally {
      await killGroupUntilGone(pgid, 5_000);
    }
  });

  it('leaves the group alone once released (the execution ended on the Runtime Server watch)', async () => {
    const task = taskGroup();
    const pgid = task.pid ?? 0;
    try {
      const watch = watchGroup(pgid);
      watch.release();
      watch.release();
      // The watcher has read its line and exited; the group is untouched.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await groupHasLiveMembers(pgid)).toBe(true);
    } finally {
      await killGroupUntilGone(pgid, 5_000);
    }
  });
});
