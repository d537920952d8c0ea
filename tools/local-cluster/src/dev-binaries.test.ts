import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BINARY_NAMES } from '@kruntimes/testing';
import {
  CONTROL_PLANE_BINARIES,
  binariesWithProgress,
  formatElapsed,
  laterBinaries,
  parseBuildStart,
  progressLine,
} from './dev-binaries.ts';

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

/** A stand-in for build.sh: its arguments in a file, progress and go's lines on stderr, a pause, the bin directory on stdout. */
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
    `#!/bin/sh\necho "$*" > ${join(root, 'args')}\n` +
      `echo '[kube-binaries] etcd: building go.etcd.io/etcd/server/v3 (its last build here took 52s)' >&2\n` +
      `echo 'go: downloading go.etcd.io/etcd/api/v3 v3.6.8' >&2\n` +
      `i=0; while [ ! -e ${join(root, 'go')} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n` +
      `echo '[kube-binaries] etcd: built in 1s' >&2\necho ${bin}\n`,
  );
  await chmod(script, 0o755);
  return { script, bin };
}

test("streams build.sh's own lines and, while a component builds, a line naming it, its elapsed time and its last build's; returns the bin directory", async () => {
  const { script, bin } = await fakeBuild(BINARY_NAMES);
  const lines: string[] = [];
  const phaseLine = /^building the control plane: etcd: \d+s so far \(its last build here took 52s\)$/;
  const dir = await binariesWithProgress(
    (line) => {
      lines.push(line);
      if (phaseLine.test(line)) void writeFile(join(root, 'go'), '');
    },
    { script, cacheRoot: join(root, 'cache'), tickMs: 100, label: 'building the control plane' },
  );
  expect(dir).toBe(bin);
  // A tick may come before the script's first line ("starting"): the build's own lines keep their order.
  expect(lines.find((line) => line.startsWith('[kube-binaries]'))).toMatch(
    /^\[kube-binaries\] etcd: building go\.etcd\.io\/etcd\/server\/v3 \(its last build here took 52s\) \(\d+s\)$/,
  );
  expect(lines).toContainEqual(expect.stringMatching(phaseLine));
  expect(lines.at(-1)).toMatch(/etcd: built in 1s/);
  // go's own lines only when the build fails.
  expect(lines.filter((line) => line.includes('go: downloading'))).toEqual([]);
});

test('named components: build.sh builds those, and only they must exist', async () => {
  const { script, bin } = await fakeBuild(['kubectl', 'weed']);
  await writeFile(join(root, 'go'), '');
  const dir = await binariesWithProgress(() => undefined, {
    script,
    cacheRoot: join(root, 'cache'),
    tickMs: 1_000,
    components: ['kubectl', 'weed'],
  });
  expect(dir).toBe(bin);
  expect(await readFile(join(root, 'args'), 'utf8')).toBe('kubectl weed\n');
});

test("a failed build shows the end of go's output", async () => {
  const script = join(root, 'failing-build.sh');
  await writeFile(script, `#!/bin/sh\necho '[kube-binaries] weed: building x' >&2\necho 'go: cannot find module' >&2\nexit 1\n`);
  await chmod(script, 0o755);
  const lines: string[] = [];
  await expect(binariesWithProgress((line) => lines.push(line), { script, cacheRoot: join(root, 'cache'), tickMs: 1_000 })).rejects.toThrow(
    /failed \(exit code 1\); the end of its output is above/,
  );
  expect(lines.at(-1)).toBe('go: cannot find module');
});

test("build.sh's building line: the component and its last build's seconds", () => {
  expect([
    parseBuildStart('[kube-binaries] kube-apiserver: building k8s.io/kubernetes/cmd/kube-apiserver (its last build here took 226s)'),
    parseBuildStart(
      '[kube-binaries] weed: building github.com/seaweedfs/seaweedfs/weed (no earlier build here; a first build takes minutes)',
    ),
    parseBuildStart('[kube-binaries] etcd: cached'),
    parseBuildStart('go: downloading k8s.io/api v0.36.3'),
  ]).toEqual([{ component: 'kube-apiserver', lastSeconds: 226 }, { component: 'weed', lastSeconds: undefined }, undefined, undefined]);
  expect([progressLine('kube-apiserver', 80_000, 226), progressLine('weed', 5_000, undefined)]).toEqual([
    'kube-apiserver: 1m20s so far (its last build here took 3m46s)',
    'weed: 5s so far (no earlier build here)',
  ]);
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

test('the control plane first, the rest beside the demo: together every binary, without what is switched off', () => {
  expect([...CONTROL_PLANE_BINARIES, ...laterBinaries({ prometheus: true, jaeger: true })].sort()).toEqual([...BINARY_NAMES].sort());
  expect(laterBinaries({ prometheus: false, jaeger: false })).toEqual(['kubectl', 'weed']);
});
