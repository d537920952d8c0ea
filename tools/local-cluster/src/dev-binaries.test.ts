import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BINARY_NAMES } from '@kruntimes/testing';
import { binariesWithProgress, formatElapsed } from './dev-binaries.ts';

let root: string;
let saved: string | undefined;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'dev-binaries-'));
  saved = process.env.KRT_KUBE_BIN_DIR;
  delete process.env.KRT_KUBE_BIN_DIR;
});
afterEach(async () => {
  if (saved !== undefined) process.env.KRT_KUBE_BIN_DIR = saved;
  await rm(root, { recursive: true, force: true });
});

/** A stand-in for build.sh: progress on stderr, a pause, the bin directory on stdout. */
async function fakeBuild(binaries: readonly string[]): Promise<{ script: string; bin: string }> {
  const bin = join(root, 'bin');
  await mkdir(bin);
  for (const name of binaries) {
    await writeFile(join(bin, name), '#!/bin/sh\n');
    await chmod(join(bin, name), 0o755);
  }
  const script = join(root, 'build.sh');
  await writeFile(
    script,
    // It goes on once the test saw the phase line (bounded: 10 s), so a busy machine cannot
    // make the build end before a tick.
    `#!/bin/sh\necho '[kube-binaries] etcd: building go.etcd.io/etcd/server/v3' >&2\n` +
      `i=0; while [ ! -e ${join(root, 'go')} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n` +
      `echo '[kube-binaries] etcd: built in 1s' >&2\necho ${bin}\n`,
  );
  await chmod(script, 0o755);
  return { script, bin };
}

test('streams the build output and a phase/elapsed line while it runs; returns the bin directory', async () => {
  const { script, bin } = await fakeBuild(BINARY_NAMES);
  const lines: string[] = [];
  const phaseLine = /^building the control-plane binaries: etcd: building go\.etcd\.io\/etcd\/server\/v3 \(elapsed \d+s\)$/;
  const dir = await binariesWithProgress(
    (line) => {
      lines.push(line);
      if (phaseLine.test(line)) void writeFile(join(root, 'go'), '');
    },
    { script, cacheRoot: join(root, 'cache'), tickMs: 100 },
  );
  expect(dir).toBe(bin);
  // A tick may come before the script's first line ("starting"): the build's own lines keep their order.
  expect(lines.find((line) => line.startsWith('[kube-binaries]'))).toMatch(
    /^\[kube-binaries\] etcd: building go\.etcd\.io\/etcd\/server\/v3 \(\d+s\)$/,
  );
  expect(lines).toContainEqual(expect.stringMatching(phaseLine));
  expect(lines.at(-1)).toMatch(/etcd: built in 1s/);
});

test('a missing binary in what build.sh printed is an error', async () => {
  const { script } = await fakeBuild(['etcd']);
  await writeFile(join(root, 'go'), '');
  await expect(binariesWithProgress(() => undefined, { script, cacheRoot: join(root, 'cache'), tickMs: 1_000 })).rejects.toThrow(
    /(kube-apiserver|kube-controller-manager|kubectl|weed) is not an executable/,
  );
  // All three are missing; the checks run in parallel, so any of them may be reported first.
});

test('elapsed time', () => {
  expect([formatElapsed(999), formatElapsed(59_000), formatElapsed(61_000), formatElapsed(600_000)]).toEqual([
    '0s',
    '59s',
    '1m01s',
    '10m00s',
  ]);
});

test('a stop requested during the build ends the build', async () => {
  const { bin } = await fakeBuild(BINARY_NAMES);
  const script = join(root, 'slow-build.sh');
  await writeFile(script, `#!/bin/sh\necho '[kube-binaries] etcd: building' >&2\nsleep 30\necho ${bin}\n`);
  await chmod(script, 0o755);
  const stop = new AbortController();
  const building = binariesWithProgress(() => undefined, { script, cacheRoot: join(root, 'cache'), tickMs: 1_000, signal: stop.signal });
  setTimeout(() => {
    stop.abort();
  }, 200);
  await expect(building).rejects.toThrow(/failed \(SIGTERM\)/);
});
