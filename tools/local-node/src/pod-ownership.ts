import { chmod, chown, lchown, lstat, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { ContainerConfigError } from './errors.ts';
import { volumeAccess } from './user-namespace.ts';
import type { ContainerIdentity } from './user-namespace.ts';

/** The host's root: owner of what no process of a Pod may own (its user namespace does not map it). */
const HOST_ROOT = 0;
/** Passable, not listable: what lies below is closed by its own mode. */
const PASS_ONLY = 0o711;

/** A container's temporary directory (its TMPDIR), as the image's /tmp would be its own. */
export function containerTmpDir(podDir: string, container: string): string {
  return join(podDir, 'containers', container, 'tmp');
}

/**
 * Gives a `hostUsers: false` Pod's directories to its mapped ids (`base` is the host id of
 * its uid and gid 0): the Pod's directory and those above its volumes and container roots
 * are passable only; each volume is its mounters' (volumeAccess), a container's root (the
 * links to its volumes) its group's, its TMPDIR its own and passable (the Runtime Server's
 * Runs pass through it to their sandboxes). No other Pod, and no Run of this one, can list
 * or open any of it.
 */
export async function secureWalledPod(
  pod: V1Pod,
  podDir: string,
  volumeDirs: ReadonlyMap<string, string>,
  identities: ReadonlyMap<string, ContainerIdentity>,
  base: number,
): Promise<void> {
  for (const dir of [podDir, join(podDir, 'volumes'), join(podDir, 'containers')]) {
    await mkdir(dir, { recursive: true });
    await setOwner(dir, HOST_ROOT, HOST_ROOT, PASS_ONLY);
  }
  for (const [name, dir] of volumeDirs) {
    const access = volumeAccess(pod, name, identities);
    await ownTree(dir, access.owner === undefined ? HOST_ROOT : base + access.owner, base + access.group, access.mode);
  }
  for (const [name, identity] of identities) {
    const containerDir = join(podDir, 'containers', name);
    await mkdir(containerDir, { recursive: true });
    await setOwner(containerDir, HOST_ROOT, HOST_ROOT, PASS_ONLY);
    await ownTree(join(containerDir, 'root'), HOST_ROOT, base + identity.gid, 0o750);
    const tmp = containerTmpDir(podDir, name);
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp);
    await setOwner(tmp, base + identity.uid, base + identity.gid, PASS_ONLY);
  }
}

async function setOwner(path: string, uid: number, gid: number, mode: number): Promise<void> {
  await chown(path, uid, gid);
  await chmod(path, mode);
}

/** Every directory gets `dirMode`, every file keeps its mode; links are never followed. */
async function ownTree(path: string, uid: number, gid: number, dirMode: number): Promise<void> {
  const info = await lstat(path);
  if (info.isSymbolicLink()) {
    await lchown(path, uid, gid);
    return;
  }
  await chown(path, uid, gid);
  if (!info.isDirectory()) return;
  await chmod(path, dirMode);
  for (const entry of await readdir(path)) await ownTree(join(path, entry), uid, gid, dirMode);
}

/**
 * The Pod's processes must pass every directory above its own (the agent's state directory
 * and its parents): a private one (a mkdtemp 0700) would stop them at start.
 */
export async function checkPassable(podDir: string): Promise<void> {
  for (let dir = dirname(podDir); ; dir = dirname(dir)) {
    const { mode } = await stat(dir).catch(() => ({ mode: 0o711 }));
    if ((mode & 0o001) === 0)
      throw new ContainerConfigError(
        'CreateContainerError',
        `${dir} (mode ${(mode & 0o7777).toString(8)}) does not let the Pod's users pass: give the local node a stateDir whose parents others may pass (o+x)`,
      );
    if (dirname(dir) === dir) return;
  }
}
