import { spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { signalGroup } from '@kruntimes/host';
import { BINARY_NAMES, ensureBinaries, kruntimesCacheRoot, REPO_ROOT } from '@kruntimes/testing';

function env(name: string): string | undefined {
  const value = process.env[name];
  return value === '' ? undefined : value;
}

export function formatElapsed(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  return seconds < 60 ? `${String(seconds)}s` : `${String(Math.floor(seconds / 60))}m${String(seconds % 60).padStart(2, '0')}s`;
}

/**
 * The control-plane binaries, built by tools/kube-binaries/build.sh on first use (several
 * minutes) and taken from its cache afterwards. Its output is streamed line by line, and
 * while it runs a `building ... (phase, elapsed)` line every 15 s says it is not stuck.
 * `KRT_KUBE_BIN_DIR` (prebuilt binaries) skips the build, as in the test harness.
 */
export async function binariesWithProgress(
  out: (line: string) => void,
  options: { script?: string; cacheRoot?: string; tickMs?: number; signal?: AbortSignal } = {},
): Promise<string> {
  if (env('KRT_KUBE_BIN_DIR') !== undefined) return ensureBinaries();
  const cacheRoot = options.cacheRoot ?? kruntimesCacheRoot();
  await mkdir(cacheRoot, { recursive: true });
  const script = options.script ?? join(REPO_ROOT, 'tools/kube-binaries/build.sh');
  // The same lock as the test harness: two builds on a cold cache would compete for the cores.
  const lock = join(cacheRoot, 'kube-binaries.lock');
  const started = performance.now();
  let phase = 'starting';
  const ticker = setInterval(() => {
    out(`building the control-plane binaries: ${phase} (elapsed ${formatElapsed(performance.now() - started)})`);
  }, options.tickMs ?? 15_000);
  try {
    const dir = await new Promise<string>((resolve, reject) => {
      // Its own process group, so that a stop ends flock, build.sh and the go build under it.
      const child = spawn('flock', [lock, script], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let stdout = '';
      let partial = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          if (line.trim() === '') continue;
          phase = line.replace(/^\[kube-binaries\] /, '');
          out(`${line} (${formatElapsed(performance.now() - started)})`);
        }
      });
      // A stop requested during a first build (minutes) ends the build, not only what follows it.
      options.signal?.addEventListener(
        'abort',
        () => {
          if (child.pid !== undefined) signalGroup(child.pid, 'SIGTERM');
        },
        { once: true },
      );
      child.once('error', (error) => {
        reject(new Error(`cannot run flock ${script} (flock is in util-linux)`, { cause: error }));
      });
      child.once('close', (code, signal) => {
        const last = stdout.trim().split('\n').at(-1) ?? '';
        if (code === 0 && last.startsWith('/')) resolve(last);
        else reject(new Error(`${script} failed (${signal ?? `exit code ${String(code)}`}); its output is above`));
      });
    });
    await Promise.all(
      BINARY_NAMES.map(async (name) => {
        try {
          await access(join(dir, name), constants.X_OK);
        } catch (error) {
          throw new Error(`${script} printed ${dir}, but ${name} is not an executable there`, { cause: error });
        }
      }),
    );
    return dir;
  } finally {
    clearInterval(ticker);
  }
}
