import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// tools/real-node/debian-mirror.sh: images.sh's Debian mirror, read from an apt
// configuration (a made-up /etc/apt here).
const script = join(import.meta.dirname, '..', '..', 'real-node', 'debian-mirror.sh');
let aptDir: string;

beforeEach(async () => {
  aptDir = await mkdtemp(join(tmpdir(), 'debian-mirror-'));
  await mkdir(join(aptDir, 'sources.list.d'));
});

afterEach(async () => {
  await rm(aptDir, { recursive: true, force: true });
});

async function mirrors(env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(script, ['bookworm'], {
      env: { PATH: process.env.PATH ?? '', KRT_APT_DIR: aptDir, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const debianSources = [
  'Types: deb',
  '# a comment',
  'URIs: http://mirror.example/debian',
  'Suites: bookworm bookworm-updates',
  'Components: main',
  'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
  '',
  'Types: deb',
  'URIs: http://security.example/debian-security/',
  'Suites: bookworm-security',
  'Components: main',
  '',
].join('\n');

test("deb822 .sources: the suite's archive and its security archive", async () => {
  await writeFile(join(aptDir, 'sources.list.d', 'debian.sources'), debianSources);
  await expect(mirrors()).resolves.toMatchObject({
    code: 0,
    stdout: 'http://mirror.example/debian\nhttp://security.example/debian-security\n',
  });
});

test("the first source in apt's order (sources.list, then sources.list.d by name); deb-src, disabled and other suites skipped", async () => {
  await writeFile(
    join(aptDir, 'sources.list'),
    [
      '# deb http://commented.example/debian bookworm main',
      'deb-src http://source.example/debian bookworm main',
      'deb [arch=amd64 signed-by=/k.gpg] http://other.example/apt nodistro main',
      'deb [ arch=amd64 ] http://first.example/debian/ bookworm main # trailing comment',
      '',
    ].join('\n'),
  );
  await writeFile(join(aptDir, 'sources.list.d', 'a.sources'), debianSources.replaceAll('mirror.example', 'later.example'));
  await writeFile(
    join(aptDir, 'sources.list.d', '0.sources'),
    'Enabled: no\nTypes: deb\nURIs: http://disabled.example/debian\nSuites: bookworm\n',
  );
  await expect(mirrors()).resolves.toMatchObject({
    code: 0,
    stdout: 'http://first.example/debian\nhttp://security.example/debian-security\n',
  });
});

test('no source for the suite: the first Debian archive, and its -security beside it', async () => {
  await writeFile(
    join(aptDir, 'sources.list.d', 'x.list'),
    'deb http://other.example/apt nodistro main\ndeb http://mirror.example/debian trixie main\n',
  );
  await expect(mirrors()).resolves.toMatchObject({
    code: 0,
    stdout: 'http://mirror.example/debian\nhttp://mirror.example/debian-security\n',
  });
});

test('the environment overrides the configuration', async () => {
  await writeFile(join(aptDir, 'sources.list.d', 'debian.sources'), debianSources);
  await expect(
    mirrors({ KRT_DEBIAN_MIRROR: 'http://env.example/debian', KRT_DEBIAN_SECURITY_MIRROR: 'http://env.example/sec' }),
  ).resolves.toMatchObject({ code: 0, stdout: 'http://env.example/debian\nhttp://env.example/sec\n' });
});

test('no Debian source at all: fails, naming the variable to set', async () => {
  await writeFile(join(aptDir, 'sources.list.d', 'x.list'), 'deb http://other.example/apt nodistro main\n');
  const { code, stderr } = await mirrors();
  expect(code).toBe(1);
  expect(stderr).toContain('KRT_DEBIAN_MIRROR');
});
