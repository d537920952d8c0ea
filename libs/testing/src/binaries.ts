import { spawn } from 'node:child_process';
import { access, constants, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlPlaneError } from './errors.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD_SCRIPT = join(REPO_ROOT, 'tools/kube-binaries/build.sh');
/**
 * The control plane's binaries, kubectl (pinned with them), SeaweedFS's `weed` (the object
 * store for artifacts), Prometheus (the dashboards' check) and Jaeger's all-in-one (the
 * tracing test's OTLP receiver).
 */
export const BINARY_NAMES = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kubectl',
  'weed',
  'prometheus',
  'jaeger-all-in-one',
] as const;

/**
 * Returns the directory holding etcd, kube-apiserver, kube-controller-manager, kubectl, weed, prometheus and jaeger-all-in-one.
 * `KRT_KUBE_BIN_DIR` points at prebuilt binaries; otherwise tools/kube-binaries/build.sh
 * provides them: a no-op when its cache holds them, a build of several minutes on a fresh
 * machine, with its progress on our stderr so that a long first run is not a silent one.
 */
export async function ensureBinaries(): Promise<string> {
  const dir = env('KRT_KUBE_BIN_DIR') ?? (await runBuildScript());
  await Promise.all(
    BINARY_NAMES.map(async (name) => {
      try {
        await access(join(dir, name), constants.X_OK);
      } catch (error) {
        throw new ControlPlaneError(`${join(dir, name)} is not an executable`, { cause: error });
      }
    }),
  );
  return dir;
}

/**
 * Runs build.sh under an exclusive lock (flock(1), util-linux) on a file in its cache:
 * several jest runs start at once under `nx run-many`, and on a cold cache each would
 * otherwise compile the same binaries side by side on the same cores.
 */
async function runBuildScript(): Promise<string> {
  const cacheRoot = kruntimesCacheRoot();
  await mkdir(cacheRoot, { recursive: true });
  const lock = join(cacheRoot, 'kube-binaries.lock');
  try {
    return await run('flock', [lock, BUILD_SCRIPT]);
  } catch (error) {
    if (!(error instanceof SpawnError && error.code === 'ENOENT')) throw error;
    process.stderr.write('[kube-binaries] flock(1) not found; building without a lock\n');
    return run(BUILD_SCRIPT, []);
  }
}

/**
 * The project's cache outside the repository (built binaries, test venvs): the same root
 * as build.sh computes, where an empty variable counts as unset too.
 */
export function kruntimesCacheRoot(): string {
  return env('KRT_KUBE_BIN_CACHE') ?? join(env('XDG_CACHE_HOME') ?? join(homedir(), '.cache'), 'kruntimes');
}

function env(name: string): string | undefined {
  const value = process.env[name];
  return value === '' ? undefined : value;
}

class SpawnError extends Error {
  readonly code: string | undefined;

  constructor(message: string, cause: NodeJS.ErrnoException) {
    super(message, { cause });
    this.name = 'SpawnError';
    this.code = cause.code;
  }
}

/** Runs a command with stderr passed through; resolves with the last line of stdout. */
async function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.once('error', (error) => {
      reject(new SpawnError(`cannot run ${command}`, error));
    });
    child.once('close', (code, signal) => {
      const dir = stdout.trim().split('\n').at(-1) ?? '';
      if (code === 0 && dir.startsWith('/')) resolve(dir);
      else reject(new ControlPlaneError(`${BUILD_SCRIPT} failed (${signal ?? `exit code ${String(code)}`}); its output is above`));
    });
  });
}
