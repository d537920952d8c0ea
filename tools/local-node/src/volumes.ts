import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { pathExists } from '@kruntimes/host';
import type {
  CoreV1Api,
  V1Container,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1Volume,
  V1VolumeProjection,
} from '@kubernetes/client-node';
import { configMapData, secretData } from './api-objects.ts';
import { downwardField } from './downward.ts';
import { ContainerConfigError } from './errors.ts';

/**
 * Volumes without a mount namespace.
 *
 * Every volume of a Pod is a directory `<podDir>/volumes/<name>` on the host (an emptyDir
 * is shared by all the Pod's containers because it is one directory). Every container
 * gets a root directory `<podDir>/containers/<name>/root` in which each volumeMount's
 * `mountPath` is a symlink to its volume directory (or to `subPath` inside it). The
 * container's environment carries that root as `KRUNTIMES_CONTAINER_ROOT`: a path P
 * inside the container is `$KRUNTIMES_CONTAINER_ROOT/P` on the host. For example the
 * in-cluster credentials are at
 * `$KRUNTIMES_CONTAINER_ROOT/var/run/secrets/kubernetes.io/serviceaccount/`, which is
 * exactly what `KubeConfig.loadFromCluster(process.env.KRUNTIMES_CONTAINER_ROOT)` reads.
 */
export const CONTAINER_ROOT_ENV = 'KRUNTIMES_CONTAINER_ROOT';

export interface VolumeContext {
  core: CoreV1Api;
  pod: V1Pod;
  podIP: string;
  hostIP: string;
  podDir: string;
}

const DEFAULT_MODE = 0o644;
const TOKEN_EXPIRATION_SECONDS = 3607;

/** Materialises every volume of the Pod; returns volume name -> host directory. */
export async function prepareVolumes(context: VolumeContext): Promise<Map<string, string>> {
  const dirs = new Map<string, string>();
  for (const volume of context.pod.spec?.volumes ?? []) {
    const dir = join(context.podDir, 'volumes', volume.name);
    // Rewritten on every (re)start of the Pod's setup so that a retry after a missing
    // Secret does not leave half of an old projection behind.
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await fillVolume(volume, dir, context);
    dirs.set(volume.name, dir);
  }
  return dirs;
}

async function fillVolume(volume: V1Volume, dir: string, context: VolumeContext): Promise<void> {
  const namespace = context.pod.metadata?.namespace ?? '';
  if (volume.emptyDir !== undefined) return;
  if (volume.secret !== undefined) {
    const data = await secretData(context.core, namespace, volume.secret.secretName ?? '', volume.secret.optional ?? false);
    await writeKeys(dir, data, volume.secret.items, volume.secret.defaultMode, `secret ${volume.secret.secretName ?? ''}`);
    return;
  }
  if (volume.configMap !== undefined) {
    const data = await configMapData(context.core, namespace, volume.configMap.name ?? '', volume.configMap.optional ?? false);
    await writeKeys(dir, data, volume.configMap.items, volume.configMap.defaultMode, `configmap ${volume.configMap.name ?? ''}`);
    return;
  }
  if (volume.downwardAPI !== undefined) {
    await writeDownward(dir, volume.downwardAPI.items ?? [], volume.downwardAPI.defaultMode, context);
    return;
  }
  if (volume.projected !== undefined) {
    for (const source of volume.projected.sources ?? []) await fillProjection(source, dir, volume.projected.defaultMode, context);
    return;
  }
  throw new ContainerConfigError(
    'CreateContainerConfigError',
    `volume ${volume.name}: only emptyDir, secret, configMap, downwardAPI and projected volumes are supported by the local node`,
  );
}

async function fillProjection(
  source: V1VolumeProjection,
  dir: string,
  defaultMode: number | undefined,
  context: VolumeContext,
): Promise<void> {
  const namespace = context.pod.metadata?.namespace ?? '';
  if (source.serviceAccountToken !== undefined) {
    const token = await requestPodToken(context, source.serviceAccountToken.audience, source.serviceAccountToken.expirationSeconds);
    await writeFileAt(dir, source.serviceAccountToken.path, Buffer.from(token, 'utf8'), defaultMode ?? DEFAULT_MODE);
  } else if (source.configMap !== undefined) {
    const data = await configMapData(context.core, namespace, source.configMap.name ?? '', source.configMap.optional ?? false);
    await writeKeys(dir, data, source.configMap.items, defaultMode, `configmap ${source.configMap.name ?? ''}`);
  } else if (source.secret !== undefined) {
    const data = await secretData(context.core, namespace, source.secret.name ?? '', source.secret.optional ?? false);
    await writeKeys(dir, data, source.secret.items, defaultMode, `secret ${source.secret.name ?? ''}`);
  } else if (source.downwardAPI !== undefined) {
    await writeDownward(dir, source.downwardAPI.items ?? [], defaultMode, context);
  } else {
    throw new ContainerConfigError(
      'CreateContainerConfigError',
      'unsupported projected volume source (clusterTrustBundle, podCertificate)',
    );
  }
}

/**
 * A service-account token bound to this Pod (TokenRequest with a Pod boundObjectRef),
 * as the kubelet requests it for the projected `kube-api-access-*` volume: it stops
 * being valid when the Pod object is deleted.
 */
async function requestPodToken(
  context: VolumeContext,
  audience: string | undefined,
  expirationSeconds: number | undefined,
): Promise<string> {
  const { pod } = context;
  const response = await context.core.createNamespacedServiceAccountToken({
    name: pod.spec?.serviceAccountName ?? 'default',
    namespace: pod.metadata?.namespace ?? '',
    body: {
      spec: {
        audiences: audience === undefined || audience === '' ? [] : [audience],
        expirationSeconds: expirationSeconds ?? TOKEN_EXPIRATION_SECONDS,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
      },
    },
  });
  const token = response.status?.token;
  if (token === undefined || token === '')
    throw new ContainerConfigError('CreateContainerConfigError', 'the TokenRequest returned no token');
  return token;
}

async function writeKeys(
  dir: string,
  data: Map<string, Buffer> | undefined,
  items: V1KeyToPath[] | undefined,
  defaultMode: number | undefined,
  what: string,
): Promise<void> {
  if (data === undefined) return;
  const selected: V1KeyToPath[] = items ?? [...data.keys()].map((key) => ({ key, path: key }));
  for (const item of selected) {
    const bytes = data.get(item.key);
    if (bytes === undefined) throw new ContainerConfigError('CreateContainerConfigError', `${what} has no key ${item.key}`);
    await writeFileAt(dir, item.path, bytes, item.mode ?? defaultMode ?? DEFAULT_MODE);
  }
}

async function writeDownward(
  dir: string,
  items: V1DownwardAPIVolumeFile[],
  defaultMode: number | undefined,
  context: VolumeContext,
): Promise<void> {
  for (const item of items) {
    if (item.fieldRef === undefined)
      throw new ContainerConfigError('CreateContainerConfigError', `downwardAPI ${item.path}: only fieldRef is supported`);
    const value = downwardField(context.pod, item.fieldRef.fieldPath, context.podIP, context.hostIP);
    await writeFileAt(dir, item.path, Buffer.from(value, 'utf8'), item.mode ?? defaultMode ?? DEFAULT_MODE);
  }
}

async function writeFileAt(dir: string, relative: string, bytes: Buffer, mode: number): Promise<void> {
  const path = insideDir(dir, relative);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
  await chmod(path, mode);
}

/** Rejects `..` and absolute paths (the API server validates these too; defence in depth). */
function insideDir(dir: string, relative: string): string {
  const clean = normalize(relative);
  if (clean.startsWith('/') || clean === '..' || clean.startsWith('../')) {
    throw new ContainerConfigError('CreateContainerConfigError', `path ${relative} escapes its volume`);
  }
  return join(dir, clean);
}

/** Builds the container's root directory with one symlink per volumeMount; returns the root. */
export async function prepareContainerRoot(
  podDir: string,
  container: V1Container,
  volumeDirs: ReadonlyMap<string, string>,
): Promise<string> {
  const root = join(podDir, 'containers', container.name, 'root');
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  // Shallow mounts first, so that a nested mount path is created under its parent's link.
  const mounts = [...(container.volumeMounts ?? [])].sort((a, b) => a.mountPath.split('/').length - b.mountPath.split('/').length);
  for (const mount of mounts) {
    const volumeDir = volumeDirs.get(mount.name);
    if (volumeDir === undefined)
      throw new ContainerConfigError('CreateContainerConfigError', `volumeMount ${mount.mountPath} names an unknown volume ${mount.name}`);
    let target = volumeDir;
    if (mount.subPath !== undefined && mount.subPath !== '') {
      target = insideDir(volumeDir, mount.subPath);
      // Like the kubelet, a missing subPath is created as a directory; a file is linked as is.
      if (!(await pathExists(target))) await mkdir(target, { recursive: true });
    }
    const link = insideDir(root, mount.mountPath.replace(/^\/+/, ''));
    await mkdir(dirname(link), { recursive: true });
    await symlink(target, link);
  }
  return root;
}
