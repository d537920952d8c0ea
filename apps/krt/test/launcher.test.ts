import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@kruntimes/testing';

// The package's bin (apps/krt/bin/krt.mjs) started the ways a user starts it: by the
// Node.js 24 of the workspace, and from the PATH by the machine's older Node.js.
const LAUNCHER = join(REPO_ROOT, 'apps/krt/bin/krt.mjs');
const BIN = join(REPO_ROOT, 'node_modules/.bin/krt');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, args, { env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** The machine's own Node.js when it is older than 24 (Debian's here): the case the launcher exists for. */
const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => {
  if (!existsSync(path)) return false;
  const version = /^v(\d+)/.exec(execFileSync(path, ['--version'], { encoding: 'utf8' }));
  return version !== null && Number(version[1]) < 24;
});
const withOldNode = oldNode === undefined ? test.skip : test;
/** Two Node.js starts and the CLI's load, on a machine that may be busy. */
const TIMEOUT_MS = 60_000;

test(
  'on Node.js 24 it runs the CLI in its own process',
  async () => {
    const help = await run(process.execPath, [LAUNCHER, '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^krt: the kruntimes CLI/);
    expect(await run(process.execPath, [LAUNCHER, 'no-such-command'])).toMatchObject({ code: 2 });
  },
  TIMEOUT_MS,
);

withOldNode(
  'from the PATH with an older Node.js first, the bin runs the CLI on the workspace’s Node.js 24',
  async () => {
    const env = { ...process.env, PATH: `${join(oldNode ?? '', '..')}:/usr/bin:/bin` };
    const help = await run(BIN, ['--help'], env);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^krt: the kruntimes CLI/);
    // The CLI's exit code comes through the launcher.
    const unknown = await run(BIN, ['no-such-command'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "no-such-command"');
  },
  TIMEOUT_MS,
);

withOldNode(
  'an older Node.js and no workspace Node.js 24: one line that says what to do, exit 1',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'krt-launcher-'));
    try {
      await mkdir(join(dir, 'bin'));
      await copyFile(LAUNCHER, join(dir, 'bin', 'krt.mjs'));
      const ran = await run(oldNode ?? '', [join(dir, 'bin', 'krt.mjs'), '--help']);
      expect(ran.code).toBe(1);
      expect(ran.stdout).toBe('');
      expect(ran.stderr).toMatch(
        /^krt: needs Node\.js 24 or later, and this is Node\.js v\d+\.\d+\.\d+ \(.*\); run npm ci in the kruntimes workspace .*\n$/,
      );
      expect(ran.stderr.split('\n')).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  TIMEOUT_MS,
);
