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

/** What the demo's functions need before anything starts: the control plane. */
export const CONTROL_PLANE_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;

/** The rest, built while the demo runs: kubectl (for the tour), weed (the artifact task), and what is asked for of Prometheus and Jaeger. */
export function laterBinaries(options: { prometheus: boolean; jaeger: boolean }): string[] {
  return ['kubectl', 'weed', ...(options.prometheus ? ['prometheus'] : []), ...(options.jaeger ? ['jaeger-all-in-one'] : [])];
}

/** build.sh's line as a component's build starts: the component, and the seconds its last build here took. */
export function parseBuildStart(line: string): { component: string; lastSeconds: number | undefined } | undefined {
  const match = /^\[kube-binaries\] (\S+): building /.exec(line);
  if (match?.[1] === undefined) return undefined;
  const last = /its last build here took (\d+)s/.exec(line)?.[1];
  return { component: match[1], lastSeconds: last === undefined ? undefined : Number(last) };
}

/** The progress line while a component builds: it, its elapsed time, and what its last build here took. */
export function progressLine(component: string, elapsedMs: number, lastSeconds: number | undefined): string {
  const last = lastSeconds === undefined ? 'no earlier build here' : `its last build here took ${formatElapsed(lastSeconds * 1000)}`;
  return `${component}: ${formatElapsed(elapsedMs)} so far (${last})`;
}

/** How many of the build's other lines (go's own) are kept to show when it fails. */
const KEPT_LINES = 40;

export interface BinariesOptions {
  /** Components to build (build.sh's names); all of them when absent. */
  components?: readonly string[];
  /** Starts each progress line, e.g. "building beside the demo". */
  label?: string;
  /** At a lower CPU priority (nice 10): a build that runs beside the demo. */
  background?: boolean;
  script?: string;
  cacheRoot?: string;
  tickMs?: number;
  signal?: AbortSignal;
}

/**
 * Binaries built by tools/kube-binaries/build.sh on first use (minutes) and taken from its
 * cache afterwards. Its own lines (`[kube-binaries] <component>: ...`) are passed on; go's
 * output is kept and shown only when the build fails. While a component builds, a line
 * every 15 s names it, its elapsed time and how long its last build here took.
 * `KRT_KUBE_BIN_DIR` (prebuilt binaries) skips the build, as in the test harness.
 */
export async function binariesWithProgress(out: (line: string) => void, options: BinariesOptions = {}): Promise<string> {
  if (env('KRT_KUBE_BIN_DIR') !== undefined) return ensureBinaries();
  const cacheRoot = options.cacheRoot ?? kruntimesCacheRoot();
  await mkdir(cacheRoot, { recursive: true });
  const script = options.script ?? join(REPO_ROOT, 'tools/kube-binaries/build.sh');
  const components = options.components ?? [];
  const label = options.label ?? 'building';
  // The same lock as the test harness: two builds on a cold cache would compete for the cores.
  const lock = join(cacheRoot, 'kube-binaries.lock');
  const started = performance.now();
  let building: { component: string; since: number; lastSeconds: number | undefined } | undefined;
  const ticker = setInterval(() => {
    out(
      building === undefined
        ? `${label}: ${components.join(', ') || 'every binary'}: starting (elapsed ${formatElapsed(performance.now() - started)})`
        : `${label}: ${progressLine(building.component, performance.now() - building.since, building.lastSeconds)}`,
    );
  }, options.tickMs ?? 15_000);
  const kept: string[] = [];
  try {
    const command = ['flock', lock, script, ...components];
    const dir = await new Promise<string>((resolve, reject) => {
      // Its own process group, so that a stop ends flock, build.sh and the go build under it.
      const [program = 'flock', ...args] = options.background === true ? ['nice', '-n', '10', ...command] : command;
      const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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
          if (!line.startsWith('[kube-binaries]')) {
            kept.push(line);
            if (kept.length > KEPT_LINES) kept.shift();
            continue;
          }
          const start = parseBuildStart(line);
          if (start !== undefined) building = { component: start.component, since: performance.now(), lastSeconds: start.lastSeconds };
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
        reject(new Error(`cannot run ${command.join(' ')} (flock is in util-linux)`, { cause: error }));
      });
      child.once('close', (code, signal) => {
        const last = stdout.trim().split('\n').at(-1) ?? '';
        if (code === 0 && last.startsWith('/')) {
          resolve(last);
          return;
        }
        if (partial.trim() !== '') kept.push(partial);
        for (const line of kept) out(line);
        reject(new Error(`${script} failed (${signal ?? `exit code ${String(code)}`}); the end of its output is above`));
      });
    });
    const expected = components.length > 0 ? components : BINARY_NAMES;
    await Promise.all(
      expected.map(async (name) => {
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
