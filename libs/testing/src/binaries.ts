import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlPlaneError } from './errors.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD_SCRIPT = join(REPO_ROOT, 'tools/kube-binaries/build.sh');
export const BINARY_NAMES = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;

/**
 * Returns the directory holding etcd, kube-apiserver and kube-controller-manager.
 * `KRT_KUBE_BIN_DIR` points at prebuilt binaries; otherwise tools/kube-binaries/build.sh
 * provides them: a no-op when its cache holds them, a build of several minutes on a fresh
 * machine, with its progress on our stderr so that a long first run is not a silent one.
 */
export async function ensureBinaries(): Promise<string> {
  const dir = process.env.KRT_KUBE_BIN_DIR ?? (await runBuildScript());
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

async function runBuildScript(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(BUILD_SCRIPT, [], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.once('error', (error) => {
      reject(new ControlPlaneError(`cannot run ${BUILD_SCRIPT}`, { cause: error }));
    });
    child.once('close', (code, signal) => {
      const dir = stdout.trim().split('\n').at(-1) ?? '';
      if (code === 0 && dir.startsWith('/')) resolve(dir);
      else reject(new ControlPlaneError(`${BUILD_SCRIPT} failed (${signal ?? `exit code ${String(code)}`}); its output is above`));
    });
  });
}
