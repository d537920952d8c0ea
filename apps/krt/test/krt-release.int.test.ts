// The released krt as a user who downloaded it runs it: the single executable file and the
// npm package that `nx run krt:release` builds (nx caches them: a build only when an input
// changed), each copied or installed into a temporary directory with no node_modules above
// it, run with a bare environment (no Node.js 24 on the PATH for the single file), against
// the real control plane and the real gateway with a Python function Run.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { promisify } from 'node:util';
import { API_GROUP, RUN_PLURAL } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { NamespaceAccess, REPO_ROOT, kubeconfigYaml } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';
import type { CliResult, KrtOptions } from './run-krt.ts';

const run = promisify(execFile);
const CLI_TIMEOUT_MS = 60_000;
const RELEASE_DIR = join(REPO_ROOT, 'dist/release/apps/krt');
const EXECUTABLE = `krt-${process.platform}-${process.arch}`;
/** Only the system's directories: the single file brings its own Node.js. */
const BARE_PATH = '/usr/local/bin:/usr/bin:/bin';

const PYTHON = `
def handle(event, context):
    return {"echo": event, "invocation": context.invocation_id}
`;

let system: System;
let kubeconfig: string;
let gatewayCa: string;
let home: string;
let version: string;

/**
 * The release, built by nx or restored from its cache. The variables an enclosing nx task
 * run (`npm test`) set for this process (its task, its output file) are not this nx's.
 */
async function buildRelease(): Promise<void> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NX_')));
  await run(join(REPO_ROOT, 'node_modules/.bin/nx'), ['run', 'krt:release', '--outputStyle=static'], {
    cwd: REPO_ROOT,
    env: { ...env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

/** Whether any directory from `dir` up to the root holds a node_modules (a package could be found there). */
function nodeModulesAbove(dir: string): string | undefined {
  for (let current = dir; ; current = dirname(current)) {
    if (existsSync(join(current, 'node_modules'))) return current;
    if (current === parse(current).root) return undefined;
  }
}

beforeAll(async () => {
  await buildRelease();
  version = (JSON.parse(await readFile(join(REPO_ROOT, 'apps/krt/package.json'), 'utf8')) as { version: string }).version;
  home = await mkdtemp(join(tmpdir(), 'krt-release-'));
  system = await System.start({ prefix: 'krt-release' });
  await new NamespaceAccess(system.cluster, system.name).grantUser('alice', 'run-reader', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch'] },
  ]);
  kubeconfig = join(home, 'alice.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user: 'alice', token: system.token('alice') }),
    { mode: 0o600 },
  );
  gatewayCa = join(home, 'gateway-ca.crt');
  await writeFile(gatewayCa, system.gateway?.caPem ?? '');
  await system.createRuntime('py', { language: 'python' });
  await system.createFunctionRun('echo', 'py', PYTHON, 'main:handle');
  await system.waitReady('echo');
}, 300_000);

afterAll(async () => {
  await system.stop();
  await rm(home, { recursive: true, force: true });
});

/** version, get and invoke through the gateway with one released krt. */
async function versionGetInvoke(released: NonNullable<KrtOptions['released']>, expectedVersion: RegExp): Promise<void> {
  const krt = (args: string[]): Promise<CliResult> =>
    runKrt(args, { kubeconfig, namespace: system.name, timeoutMs: CLI_TIMEOUT_MS, released });

  expect(await krt(['version'])).toMatchObject({ code: 0, stdout: expect.stringMatching(expectedVersion) as unknown, stderr: '' });

  const got = await krt(['get', 'echo']);
  expect(got).toMatchObject({ code: 0, stderr: '' });
  expect(got.stdout).toMatch(
    /^NAME\s+PHASE\s+REASON\s+MODE\s+RUNTIME\s+ATTEMPT\s+AGE\necho\s+Ready\s+FunctionRegistered\s+function\s+py\s+1\s+\d+[smh]\n$/,
  );

  const gateway = ['--gateway', system.gateway?.url ?? '', '--gateway-ca', gatewayCa];
  const invoked = await krt(['invoke', 'echo', '--data', '{"n":1}', '--invocation-id', 'released-1', ...gateway]);
  expect(invoked.stderr).toMatch(/^invocation released-1 \(attempt 1\) ok\n/);
  expect(invoked.code).toBe(0);
  expect(JSON.parse(invoked.stdout)).toEqual({ echo: { n: 1 }, invocation: 'released-1' });

  // What needs the repository says so instead of failing on a missing file (`dev` first: its own arguments).
  const dev = await run(released.executable, ['dev', 'status'], { env: released.env, cwd: released.cwd }).then(
    () => ({ code: 0, stderr: '' }),
    (error: unknown) => error as { code: number; stderr: string },
  );
  expect(dev).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/^error: krt dev runs from a clone of the kruntimes repository/) as unknown,
  });
}

test('the single executable file: krt version, get and invoke from a directory with no node_modules and no Node.js on the PATH', async () => {
  const dir = await mkdtemp(join(home, 'single-file-'));
  expect(nodeModulesAbove(dir)).toBeUndefined();
  const executable = join(dir, 'krt');
  await copyFile(join(RELEASE_DIR, EXECUTABLE), executable);
  await run('chmod', ['755', executable]);
  const env = { PATH: BARE_PATH, HOME: dir };
  await versionGetInvoke(
    { executable, env, cwd: dir },
    new RegExp(`^krt ${version} \\(single executable, ${process.platform}-${process.arch}\\)\\n$`),
  );
}, 180_000);

test('the npm package: its tarball installed with no registry, its bin runs on Node.js 24 with no other package', async () => {
  const dir = await mkdtemp(join(home, 'npm-'));
  const prefix = join(dir, 'prefix');
  const tarball = join(RELEASE_DIR, `kruntimes-krt-${version}.tgz`);
  await run('npm', ['install', '--global', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball], {
    cwd: dir,
    timeout: 120_000,
  });
  // The package brings no dependency: krt's own directory is all that was installed.
  const installed = join(prefix, 'lib/node_modules/@kruntimes/krt');
  expect(existsSync(join(installed, 'node_modules'))).toBe(false);
  expect(nodeModulesAbove(dirname(prefix))).toBeUndefined();
  // The Node.js 24 running this test first on the PATH, as a user who installed it has.
  const env = { PATH: `${dirname(process.execPath)}:${BARE_PATH}`, HOME: dir };
  await versionGetInvoke(
    { executable: join(prefix, 'bin/krt'), env, cwd: dir },
    new RegExp(`^krt ${version} \\(Node\\.js ${process.version.replaceAll('.', '\\.')}, ${process.platform}-${process.arch}\\)\\n$`),
  );
}, 180_000);
