import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killGroupUntilGone, groupHasLiveMembers } from './process-group.ts';
import { guardProcess, holdLine, releaseLine } from './group-watch.ts';
import { killAllOf } from './run-wall.ts';
import { processesOf } from './uid-processes.ts';

/** Uids no one else on the machine uses (the wall's tests take theirs from a range of their own). */
const UID_FOR_GUARD_TEST = 3_700_100;

/** Waits (bounded) until `uid` has `count` live processes; returns how many it has. */
async function countWithin(uid: number, count: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let found = processesOf(uid).length;
  while (found !== count && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    found = processesOf(uid).length;
  }
  return found;
}
import type { GuardedThing } from './group-watch.ts';

/** Polls until the group has no live member, false at the bound. */
async function goneWithin(pgid: number, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (!(await groupHasLiveMembers(pgid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** Polls until none of `paths` exists, false at the bound. */
async function removedWithin(paths: string[], ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    if (paths.every((path) => !existsSync(path))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

/** `count` directories with a file each, as a Runtime Server's temporary directories. */
function scratchDirs(count: number): string[] {
  return Array.from({ length: count }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'guard-test-'));
    writeFileSync(join(dir, 'file'), 'x');
    return dir;
  });
}

/** Runs the guard script on `input` (then end of file); resolves with what it printed: its live ids. */
/**
 * A stand-in Runtime Server: a Node process running `body` (an ES module that imports
 * this lib's guard as the real one does, and starts `task()` groups), given `args` as JSON
 * in argv[1]. Resolves with it and the first line it writes (the pids it reports).
 */
async function standInServer(body: string, args: unknown): Promise<{ server: ChildProcess; line: string }> {
  const server = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { guard, guardPid } from ${JSON.stringify(join(import.meta.dirname, 'group-watch.ts'))};
       import { spawn } from 'node:child_process';
       const task = () => spawn('sh', ['-c', 'sleep 300 & sleep 300; wait'], { detached: true, stdio: 'ignore' });
       ${body}
       setInterval(() => undefined, 1000);`,
      JSON.stringify(args),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await Promise.race([
    once(server.stdout, 'data'),
    once(server, 'exit').then(() => {
      throw new Error('the stand-in Runtime Server exited before it started the tasks');
    }),
  ])) as [Buffer];
  return { server, line: line.toString() };
}

async function runGuard(input: string): Promise<string> {
  const { command, args, options } = guardProcess();
  const child = spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'inherit'] });
  const printed: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => printed.push(chunk));
  child.stdin.end(input);
  expect(await once(child, 'close')).toEqual([0, null]);
  return Buffer.concat(printed).toString();
}

describe('guard', () => {
  // A stand-in for the Runtime Server: a process that starts task groups and guards them
  // and directories through guard(), releases one, then is killed with SIGKILL (none of its
  // code runs then). One guard process serves every item.
  it('kills every unreleased group and removes every unreleased path when the process that holds it dies with SIGKILL', async () => {
    const dirs = scratchDirs(4);
    const { server, line } = await standInServer(
      `const [a, b, c, released] = JSON.parse(process.argv[1]);
       const [taskA, taskB, taskR] = [task(), task(), task()];
       guard({ killGroup: taskA.pid, removePath: a });
       guard({ removePath: b }).group(taskB.pid);
       guard({ removePath: c });
       const r = guard({ killGroup: taskR.pid, removePath: released });
       r.release();
       r.release();
       r.group(taskR.pid);
       process.stdout.write([taskA.pid, taskB.pid, taskR.pid].join(' ') + '\\n');`,
      dirs,
    );
    expect(line).toMatch(/^\d+ \d+ \d+\n$/);
    const groups = line.trim().split(' ').map(Number);
    const [groupA = 0, groupB = 0, groupR = 0] = groups;
    try {
      for (const pgid of groups) expect(await groupHasLiveMembers(pgid)).toBe(true);
      server.kill('SIGKILL');
      expect(await goneWithin(groupA, 5_000)).toBe(true);
      expect(await goneWithin(groupB, 5_000)).toBe(true);
      expect(await removedWithin(dirs.slice(0, 3), 5_000)).toBe(true);
      // The released item is the owner's business: untouched.
      expect(await groupHasLiveMembers(groupR)).toBe(true);
      expect(existsSync(join(dirs[3] ?? '', 'file'))).toBe(true);
    } finally {
      for (const pgid of groups) await killGroupUntilGone(pgid, 5_000);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  // The guard killed while its Runtime Server lives (task code may signal it): a new one
  // takes over what is held (told again) and what is held after.
  it('replaces a killed guard, which then guards what was held before and after', async () => {
    const dirs = scratchDirs(2);
    const { server, line } = await standInServer(
      `const [a, b] = JSON.parse(process.argv[1]);
       const taskA = task();
       guard({ killGroup: taskA.pid, removePath: a });
       const first = guardPid();
       process.kill(first, 'SIGKILL');
       for (let i = 0; i < 400 && (guardPid() === undefined || guardPid() === first); i++) await new Promise((r) => setTimeout(r, 25));
       const taskB = task();
       guard({ killGroup: taskB.pid, removePath: b });
       process.stdout.write([taskA.pid, taskB.pid, first, guardPid()].join(' ') + '\\n');`,
      dirs,
    );
    expect(line).toMatch(/^\d+ \d+ \d+ \d+\n$/);
    const [groupA = 0, groupB = 0, first, second] = line.trim().split(' ').map(Number);
    try {
      expect(second).not.toBe(first);
      server.kill('SIGKILL');
      expect(await goneWithin(groupA, 5_000)).toBe(true);
      expect(await goneWithin(groupB, 5_000)).toBe(true);
      expect(await removedWithin(dirs, 5_000)).toBe(true);
    } finally {
      for (const pgid of [groupA, groupB]) await killGroupUntilGone(pgid, 5_000);
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('kills a held group at end of file and leaves a released one alone', async () => {
    const task = () => spawn('sh', ['-c', 'sleep 300 & sleep 300; wait'], { detached: true, stdio: 'ignore' });
    const [held, released] = [task(), task()];
    const [heldGroup = 0, releasedGroup = 0] = [held.pid, released.pid];
    try {
      const live = await runGuard(holdLine(1, { group: heldGroup }) + holdLine(2, { group: releasedGroup }) + releaseLine(2));
      expect(live).toBe(' 1 \n');
      expect(await goneWithin(heldGroup, 5_000)).toBe(true);
      expect(await groupHasLiveMembers(releasedGroup)).toBe(true);
    } finally {
      await killGroupUntilGone(heldGroup, 5_000);
      await killGroupUntilGone(releasedGroup, 5_000);
    }
  });

  // A Run's processes in sessions of their own (setsid) are out of every group's reach: the
  // guard finds them by uid. Needs root (setuid to the test's uids).
  (process.getuid?.() === 0 ? it : it.skip)(
    'kills every process of a held uid at end of file, whatever its session, and leaves a released uid alone',
    async () => {
      const [heldUid, releasedUid] = [UID_FOR_GUARD_TEST, UID_FOR_GUARD_TEST + 1];
      const setsidSleepers = (uid: number) =>
        spawn('sh', ['-c', 'setsid sleep 300 & setsid sleep 300 & exec sleep 300'], {
          uid,
          gid: uid,
          detached: true,
          stdio: 'ignore',
          cwd: '/',
        });
      const children = [setsidSleepers(heldUid), setsidSleepers(releasedUid)];
      try {
        expect(await countWithin(heldUid, 3, 5_000)).toBe(3);
        expect(await countWithin(releasedUid, 3, 5_000)).toBe(3);
        const live = await runGuard(holdLine(1, { uid: heldUid }) + holdLine(2, { uid: releasedUid }) + releaseLine(2));
        expect(live).toBe(' 1 \n');
        expect(await countWithin(heldUid, 0, 5_000)).toBe(0);
        expect(processesOf(releasedUid)).toHaveLength(3);
      } finally {
        for (const child of children) child.kill('SIGKILL');
        await killAllOf({ uid: heldUid, gid: heldUid }, 5_000);
        await killAllOf({ uid: releasedUid, gid: releasedUid }, 5_000);
      }
    },
  );

  describe('its protocol (end of file after the lines)', () => {
    let root = '';
    beforeEach(() => {
      root = mkdtempSync(join(tmpdir(), 'guard-protocol-'));
    });
    afterEach(() => {
      rmSync(root, { recursive: true, force: true });
    });

    /** Directories made under the test's root before the guard runs. */
    const made = (...names: string[]) =>
      names.map((name) => {
        const path = join(root, name);
        mkdirSync(path, { recursive: true });
        writeFileSync(join(path, 'file'), 'x');
        return path;
      });

    const cases: {
      name: string;
      /** The lines, given the directories `made` in order. */
      input: (dirs: string[], root: string) => string;
      dirs: string[];
      /** The ids still live at end of file, as the guard prints them. */
      live: string;
      /** Which of `dirs` are gone afterwards. */
      removed: boolean[];
    }[] = [
      { name: 'nothing held', input: () => '', dirs: ['a'], live: ' ', removed: [false] },
      { name: 'a held path is removed', input: ([a]) => `hold 1 path ${a}\n`, dirs: ['a'], live: ' 1 ', removed: [true] },
      {
        name: 'a released path is kept, the others removed',
        input: ([a, b, c]) => `hold 1 path ${a}\nhold 2 path ${b}\nhold 3 path ${c}\nrelease 2\n`,
        dirs: ['a', 'b', 'c'],
        live: ' 1 3 ',
        removed: [true, false, true],
      },
      {
        name: 'release forgets the group and the path of an id, and an id held again is live again',
        input: ([a, b]) => `hold 7 path ${a}\nhold 7 group 99999999\nrelease 7\nhold 8 path ${b}\nrelease 8\nhold 8 path ${b}\n`,
        dirs: ['a', 'b'],
        live: ' 8 ',
        removed: [false, true],
      },
      {
        name: 'releasing an unknown id, or one twice, changes nothing',
        input: ([a]) => `release 5\nhold 15 path ${a}\nrelease 5\nrelease 1\nrelease 15\nrelease 15\n`,
        dirs: ['a'],
        live: ' ',
        removed: [false],
      },
      {
        name: 'a path with spaces (trailing too), quotes and a backslash is removed as it is',
        input: ([a]) => `hold 1 path ${a}\n`,
        dirs: [`a b '"\\ `],
        live: ' 1 ',
        removed: [true],
      },
      {
        name: 'many ids: only the live ones are kept',
        input: ([a, b]) =>
          Array.from({ length: 3000 }, (_, i) => `hold ${String(i)} path ${i === 2999 ? (b ?? '') : join(root, 'none', String(i))}\n`).join(
            '',
          ) +
          Array.from({ length: 2999 }, (_, i) => `release ${String(i)}\n`).join('') +
          `hold 3000 path ${a ?? ''}\n`,
        dirs: ['a', 'b'],
        live: ' 2999 3000 ',
        removed: [true, true],
      },
      {
        name: 'bad lines are refused: ids, kinds, relative paths, the root, dangerous groups, a line cut short',
        input: ([k]) =>
          [
            `hold x path ${k}`,
            `hold -1 path ${k}`,
            `hold 1x path ${k}`,
            `hold 1;rm path ${k}`,
            `hold $(id) path ${k}`,
            `holds 1 path ${k}`,
            ` hold 1 path ${k}`,
            `hold 1 paths ${k}`,
            `hold 1 path`,
            `hold 1 path relative/${k}`,
            `hold 2 path /`,
            `hold 3 path //`,
            `hold 4 group 1`,
            `hold 4 group 0`,
            `hold 4 group 01`,
            `hold 4 group -5`,
            `hold 4 group 5 6`,
            `hold 4 group $$`,
            `hold 4 group`,
            `released`,
            `hold 9 path ${k}`,
          ].join('\n'),
        dirs: ['k'],
        live: ' ',
        removed: [false],
      },
      {
        name: 'path text is never evaluated nor expanded: command substitution, variables, globs stay literal',
        input: (_, r) =>
          [
            `hold 1 path ${r}/$(touch ${r}/pwned)`,
            `hold 2 path ${r}/\`touch ${r}/pwned\``,
            `hold 3 path ${r}/x;touch ${r}/pwned`,
            `hold 4 path ${r}/*`,
            `hold 5 path ${r}/$HOME`,
            '',
          ].join('\n'),
        dirs: ['k'],
        live: ' 1 2 3 4 5 ',
        removed: [false],
      },
    ];

    it.each(cases)('$name', async ({ input, dirs, live, removed }) => {
      const paths = made(...dirs);
      expect(await runGuard(input(paths, root))).toBe(`${live}\n`);
      expect(paths.map((path) => !existsSync(path))).toEqual(removed);
      expect(existsSync(join(root, 'pwned'))).toBe(false);
    });
  });

  it('writes only lines the guard accepts, and throws for what it must never act on', () => {
    const lines: [number, GuardedThing, string][] = [
      [1, { group: 4242 }, 'hold 1 group 4242\n'],
      [0, { path: '/tmp/krt-out-x' }, 'hold 0 path /tmp/krt-out-x\n'],
      [12, { path: '/tmp/a b ' }, 'hold 12 path /tmp/a b \n'],
      [3, { uid: 100000 }, 'hold 3 uid 100000\n'],
    ];
    for (const [id, thing, line] of lines) expect(holdLine(id, thing)).toBe(line);
    expect(releaseLine(3)).toBe('release 3\n');
    const refused: [number, GuardedThing, string][] = [
      [1, { group: 1 }, 'not a process group'],
      [1, { group: 0 }, 'not a process group'],
      [1, { group: -7 }, 'not a process group'],
      [1, { group: 2.5 }, 'not a process group'],
      [1, { uid: 0 }, 'not a uid'],
      [1, { uid: -1 }, 'not a uid'],
      [1, { uid: 1.5 }, 'not a uid'],
      [1, { path: 'tmp/x' }, 'must be absolute'],
      [1, { path: '/tmp/a\nhold 2 path /' }, 'newline'],
      [1, { path: '/tmp/a\0' }, 'newline or NUL'],
      [1, { path: '/' }, 'root'],
      [1, { path: '//' }, 'root'],
      [-1, { group: 5 }, 'not a guard item id'],
      [1.5, { group: 5 }, 'not a guard item id'],
    ];
    for (const [id, thing, message] of refused) expect(() => holdLine(id, thing)).toThrow(message);
    expect(() => releaseLine(-1)).toThrow('not a guard item id');
  });
});
