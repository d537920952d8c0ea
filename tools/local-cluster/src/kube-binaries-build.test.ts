import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@kruntimes/testing';

// tools/kube-binaries/build.sh with a stand-in `go` on the PATH (its build writes a program
// that prints $FAKE_VERSION): which components it builds, and the seconds it keeps per component.
const SCRIPT = join(REPO_ROOT, 'tools/kube-binaries/build.sh');
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'kube-binaries-build-'));
  await mkdir(join(root, 'path'));
  const fakeGo = [
    '#!/bin/sh',
    'case "$1" in',
    '  env) echo go0.fake ;;',
    '  build)',
    '    while [ $# -gt 0 ]; do [ "$1" = -o ] && { shift; out=$1; }; shift; done',
    '    sleep 1',
    `    printf '#!/bin/sh\\necho "%s"\\n' "$FAKE_VERSION" > "$out" && chmod +x "$out" ;;`,
    'esac',
    '',
  ].join('\n');
  await writeFile(join(root, 'path', 'go'), fakeGo);
  await chmod(join(root, 'path', 'go'), 0o755);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function build(...components: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const etcdVersion = /go\.etcd\.io\/etcd\/server\/v3 v(\S+)/.exec(
    await readFile(join(REPO_ROOT, 'tools/kube-binaries/etcd/go.mod'), 'utf8'),
  )?.[1];
  try {
    const { stdout, stderr } = await promisify(execFile)(SCRIPT, components, {
      env: {
        ...process.env,
        PATH: `${join(root, 'path')}:${process.env.PATH ?? ''}`,
        KRT_KUBE_BIN_CACHE: join(root, 'cache'),
        FAKE_VERSION: etcdVersion ?? '',
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

test('named components only; each build records its seconds, and the next build of it names them', async () => {
  const first = await build('etcd');
  expect(first.code).toBe(0);
  expect(first.stderr).toMatch(
    /^\[kube-binaries\] etcd: building go\.etcd\.io\/etcd\/server\/v3 \(no earlier build here; a first build takes minutes\)$/m,
  );
  const seconds = /etcd: built in (\d+)s/.exec(first.stderr)?.[1];
  expect(Number(seconds)).toBeGreaterThanOrEqual(1);
  const bin = first.stdout.trim();
  expect((await readdir(bin)).filter((name) => !name.startsWith('.'))).toEqual(['etcd']);
  expect(await readFile(join(root, 'cache', 'kube-binaries', 'build-seconds', 'etcd'), 'utf8')).toBe(`${seconds ?? ''}\n`);

  expect((await build('etcd')).stderr).toContain('[kube-binaries] etcd: cached');
  await unlink(join(bin, 'etcd'));
  expect((await build('etcd')).stderr).toContain(`etcd: building go.etcd.io/etcd/server/v3 (its last build here took ${seconds ?? ''}s)`);
}, 60_000);

test('an unknown component is a usage error', async () => {
  const { code, stderr } = await build('etcd', 'kubelet');
  expect(code).toBe(2);
  expect(stderr).toContain("unknown component 'kubelet'");
});
