import { execFile, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const WORKSPACE_ROOT = join(import.meta.dirname, '..', '..', '..');
export const CHART_DIR = join(WORKSPACE_ROOT, 'deploy/charts/kruntimes');
export const BUILD_HELM_SCRIPT = join(WORKSPACE_ROOT, 'tools/chart-checks/scripts/build-helm.sh');

const execFileAsync = promisify(execFile);

function env(name: string): string | undefined {
  const value = process.env[name];
  return value === '' ? undefined : value;
}

/**
 * The path of the helm binary: build-helm.sh builds it from its Go module into the tool
 * cache on first use (minutes) and only verifies it later (well under a second). Runs
 * under flock(1) on a file in the cache, as the control-plane build does, so that parallel
 * test runs do not compile it side by side.
 */
export async function ensureHelm(): Promise<string> {
  const cacheRoot = env('KRT_HELM_CACHE') ?? join(env('XDG_CACHE_HOME') ?? join(homedir(), '.cache'), 'kruntimes');
  await mkdir(cacheRoot, { recursive: true });
  const lock = join(cacheRoot, 'helm.lock');
  let stdout: string;
  try {
    stdout = await runScript('flock', [lock, BUILD_HELM_SCRIPT]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    process.stderr.write('[helm] flock(1) not found; building without a lock\n');
    stdout = await runScript(BUILD_HELM_SCRIPT, []);
  }
  const path = stdout.trim().split('\n').at(-1) ?? '';
  if (!path.startsWith('/')) throw new Error(`${BUILD_HELM_SCRIPT} printed no binary path`);
  return path;
}

/** Runs a command with stderr passed through (the build's progress); resolves with its stdout. */
async function runScript(command: string, args: string[]): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${BUILD_HELM_SCRIPT} failed (${signal ?? `exit code ${String(code)}`}); its output is above`));
    });
  });
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm without network or user config: no repositories, a scratch config home. */
export async function runHelm(helm: string, args: string[]): Promise<HelmResult> {
  const scratch = join(WORKSPACE_ROOT, 'tmp', 'chart-checks-helm');
  try {
    const { stdout, stderr } = await execFileAsync(helm, args, {
      cwd: WORKSPACE_ROOT,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: scratch,
        HELM_CONFIG_HOME: join(scratch, 'config'),
        HELM_CACHE_HOME: join(scratch, 'cache'),
        HELM_DATA_HOME: join(scratch, 'data'),
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}
