// What `dev up` needs from the host besides `npm ci`.
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';

/** What `up` needs from the host besides `npm ci`, each with what it is for. */
export async function missingPrerequisites(): Promise<string[]> {
  const needed: [string, string][] = [
    ['openssl', "openssl (the control plane's and the gateway's certificates)"],
    ['python3', 'python3 (the Python Runtime Server)'],
    ['bash', 'bash (the Bash Runtime Server)'],
  ];
  // build.sh asks go for its version even when its cache is complete.
  if ((process.env.KRT_KUBE_BIN_DIR ?? '') === '')
    needed.push(['go', 'go (tools/kube-binaries/build.sh builds the control-plane binaries; or set KRT_KUBE_BIN_DIR)']);
  const found = await Promise.all(needed.map(async ([command]) => onPath(command)));
  return needed.filter((_, index) => found[index] !== true).map(([, what]) => what);
}

export async function onPath(command: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir === '') continue;
    try {
      await access(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}
