import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killGroupUntilGone, groupHasLiveMembers } from './process-group.ts';
import { guard, guardProcess } from './group-watch.ts';

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

/** Polls until none of `paths` exists, false at the bound. */
async function removedWithin(paths: string[], ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (paths.every((path) => !existsSync(path))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Two directories with a file each, as a Runtime Server's temporary directories. */
function scratchDirs(): string[] {
  return [1, 2].map(() => {
    const dir = mkdtempSync(join(tmpdir(), 'guard-test-'));
    writeFileSync(join(dir, 'file'), 'x');
    return dir;
  });
}

describe('guard', () => {
  // A stand-in for the Runtime Server: a process that starts a task group and its guard
  // (spawned as guard spawns it), then is killed with SIGKILL (none of its code runs then).
  it('kills the task group and removes the paths when the process that holds it dies with SIGKILL', async () => {
    const dirs = scratchDirs();
    const server = spawn(
      process.execPath,
      [
        '-e',
        `const { spawn } = require('node:child_process');
         const task = spawn('sh', ['-c', 'sleep 300 & sleep 300; wait'], { detached: true, stdio: 'ignore' });
         const guarded = JSON.parse(process.argv[1].replace('PGID', String(task.pid)));
         spawn(guarded.command, guarded.args, guarded.options);
         process.stdout.write(String(task.pid) + '\\n');
         setInterval(() => undefined, 1000);`,
        JSON.stringify(guardProcess({ killGroup: 99999999, removePaths: dirs })).replace('"99999999"', '"PGID"'),
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
      expect(dirs.every((dir) => existsSync(dir))).toBe(true);
      server.kill('SIGKILL');
      expect(await goneWithin(pgid, 5_000)).toBe(true);
      expect(await removedWithin(dirs, 5_000)).toBe(true);
    } finally {
      await killGroupUntilGone(pgid, 5_000);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('kills a group named after it started, and removes paths with no group at all', async () => {
    const dirs = scratchDirs();
    const server = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { guard } from ${JSON.stringify(join(import.meta.dirname, 'group-watch.ts'))};
         import { spawn } from 'node:child_process';
         const [withGroup, alone] = JSON.parse(process.argv[1]);
         const guarded = guard({ removePaths: [withGroup] });
         guard({ removePaths: [alone] });
         const task = spawn('sh', ['-c', 'sleep 300 & sleep 300; wait'], { detached: true, stdio: 'ignore' });
         guarded.group(task.pid);
         process.stdout.write(String(task.pid) + '\\n');
         setInterval(() => undefined, 1000);`,
        JSON.stringify(dirs),
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
    expect(pgid).toBeGreaterThan(1);
    try {
      expect(await groupHasLiveMembers(pgid)).toBe(true);
      server.kill('SIGKILL');
      expect(await goneWithin(pgid, 5_000)).toBe(true);
      expect(await removedWithin(dirs, 5_000)).toBe(true);
    } finally {
      await killGroupUntilGone(pgid, 5_000);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves the group and the paths alone once released (the owner ended them on its own watch)', async () => {
    const task = taskGroup();
    const pgid = task.pid ?? 0;
    const dirs = scratchDirs();
    try {
      // Spawned as guard() spawns it, so that its exit can be awaited; then released as guard().release() does.
      const { command, args, options } = guardProcess({ killGroup: pgid, removePaths: dirs });
      const guarded = spawn(command, args, options);
      const exited = once(guarded, 'exit');
      guarded.stdin.end(`group ${String(pgid)}\nreleased\n`);
      expect(await exited).toEqual([0, null]);
      expect(await groupHasLiveMembers(pgid)).toBe(true);
      expect(dirs.every((dir) => existsSync(dir))).toBe(true);
      // guard() releases at most once, and writes nothing after.
      const handle = guard({ killGroup: pgid, removePaths: dirs });
      handle.release();
      handle.release();
      handle.group(pgid);
    } finally {
      await killGroupUntilGone(pgid, 5_000);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a relative path and a group that would signal everything', () => {
    expect(() => guardProcess({ removePaths: ['tmp/x'] })).toThrow('must be absolute');
    expect(() => guardProcess({ killGroup: 1 })).toThrow('not a process group');
    expect(() => guardProcess({ killGroup: 0 })).toThrow('not a process group');
  });
});
