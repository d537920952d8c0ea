import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { BackoffOptions } from './backoff.ts';
import { ConfigError } from './errors.ts';

/**
 * What an image "contains" on this host: the local command that stands in for the
 * image's ENTRYPOINT, its CMD and its ENV. A container's `command` replaces `entrypoint`
 * and its `args` replace `cmd`, exactly as with a container runtime.
 */
export interface ImageCommand {
  entrypoint: string[];
  cmd?: string[];
  env?: Record<string, string>;
  /** Host directory the command runs in when the container sets no `workingDir` (the image's WORKDIR). */
  workingDir?: string;
  /**
   * Variables whose value is a container path that the command opens as is (it does not know
   * KRUNTIMES_CONTAINER_ROOT): an absolute value becomes the host path under the container's
   * root, as a mount namespace would resolve it.
   */
  pathEnv?: string[];
}

/** The agent's configuration; `main.ts` reads it from a JSON file (see README). */
export interface LocalNodeConfig {
  nodeName: string;
  /** Image reference (exact, or without tag/digest) -> local command. */
  images: Record<string, ImageCommand>;
  /** Pod directories (volumes, container roots) and container logs live here. */
  stateDir: string;
  /** Only Pods in these namespaces are bound and run; default: every namespace. */
  namespaces?: string[];
  /** Unscheduled Pods with one of these `spec.schedulerName`s are bound to this node. */
  schedulerNames?: string[];
  crashLoopBackoff?: BackoffOptions;
  /** Node Lease duration; renewed every quarter of it, like the kubelet (40 s / 10 s). */
  leaseDurationSeconds?: number;
  /** Where the 127.0.0.x lock files of all agents on this host live. */
  addressLockDir?: string;
  /**
   * The kubelet endpoint (container logs for `kubectl logs`) on the node's InternalIP:
   * serving certificate and key for that address, and the CA that signs kube-apiserver's
   * kubelet client certificate (`ClusterInfo.kubeletServer` of @kruntimes/testing).
   * Absent: no endpoint, and the API server cannot read this node's logs.
   */
  kubeletServer?: KubeletServerConfig;
}

export interface KubeletServerConfig {
  certFile: string;
  keyFile: string;
  clientCaFile: string;
  /** Default 0: a free port, which the Node's status names. */
  port?: number;
}

export const DEFAULT_SCHEDULER_NAMES = ['default-scheduler'];

/** The command configured for `image`: exact reference first, then the name without tag or digest. */
export function imageCommand(images: Readonly<Record<string, ImageCommand>>, image: string): ImageCommand | undefined {
  return images[image] ?? images[stripTagAndDigest(image)];
}

export function stripTagAndDigest(image: string): string {
  const withoutDigest = image.split('@')[0] ?? image;
  const slash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  // A colon before the last slash is a registry port, not a tag.
  return colon > slash ? withoutDigest.slice(0, colon) : withoutDigest;
}

/** Reads and validates a JSON config file; relative paths are relative to the file. */
export async function loadConfigFile(path: string): Promise<LocalNodeConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read the config file ${path}`, { cause: error });
  }
  return parseConfig(raw, dirname(path));
}

export function parseConfig(raw: unknown, baseDir: string): LocalNodeConfig {
  if (!isRecord(raw)) throw new ConfigError('the config must be a JSON object');
  const nodeName = raw.nodeName;
  if (typeof nodeName !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(nodeName)) {
    throw new ConfigError('nodeName must be a DNS subdomain');
  }
  const stateDir = raw.stateDir;
  if (typeof stateDir !== 'string' || stateDir === '') throw new ConfigError('stateDir must be a path');
  const imagesRaw = raw.images;
  if (!isRecord(imagesRaw)) throw new ConfigError('images must map image names to {entrypoint, cmd?, env?}');
  const images: Record<string, ImageCommand> = {};
  for (const [image, value] of Object.entries(imagesRaw)) {
    if (!isRecord(value) || !isStringArray(value.entrypoint) || value.entrypoint.length === 0) {
      throw new ConfigError(`images["${image}"].entrypoint must be a non-empty array of strings`);
    }
    const cmd = value.cmd;
    const env = value.env;
    if (cmd !== undefined && !isStringArray(cmd)) throw new ConfigError(`images["${image}"].cmd must be an array of strings`);
    if (env !== undefined && !(isRecord(env) && Object.values(env).every((v) => typeof v === 'string'))) {
      throw new ConfigError(`images["${image}"].env must map names to strings`);
    }
    const workingDir = value.workingDir;
    if (workingDir !== undefined && typeof workingDir !== 'string') throw new ConfigError(`images["${image}"].workingDir must be a path`);
    const pathEnv = value.pathEnv;
    if (pathEnv !== undefined && !isStringArray(pathEnv))
      throw new ConfigError(`images["${image}"].pathEnv must be an array of variable names`);
    images[image] = {
      ...(workingDir === undefined ? {} : { workingDir: resolve(baseDir, workingDir) }),
      entrypoint: value.entrypoint.map((part, i) => (i === 0 && part.includes('/') && !isAbsolute(part) ? resolve(baseDir, part) : part)),
      ...(cmd === undefined ? {} : { cmd }),
      ...(env === undefined ? {} : { env: env as Record<string, string> }),
      ...(pathEnv === undefined ? {} : { pathEnv }),
    };
  }
  const config: LocalNodeConfig = { nodeName, stateDir: resolve(baseDir, stateDir), images };
  const namespaces = raw.namespaces;
  if (namespaces !== undefined) {
    if (!isStringArray(namespaces)) throw new ConfigError('namespaces must be an array of strings');
    config.namespaces = namespaces;
  }
  const schedulerNames = raw.schedulerNames;
  if (schedulerNames !== undefined) {
    if (!isStringArray(schedulerNames)) throw new ConfigError('schedulerNames must be an array of strings');
    config.schedulerNames = schedulerNames;
  }
  const backoff = raw.crashLoopBackoff;
  if (backoff !== undefined) {
    if (!isRecord(backoff) || !isPositive(backoff.initialMs) || !isPositive(backoff.maxMs)) {
      throw new ConfigError('crashLoopBackoff must be {initialMs, maxMs} with positive numbers');
    }
    config.crashLoopBackoff = { initialMs: backoff.initialMs, maxMs: backoff.maxMs };
  }
  const kubeletServer = raw.kubeletServer;
  if (kubeletServer !== undefined) {
    const { certFile, keyFile, clientCaFile, port } = isRecord(kubeletServer) ? kubeletServer : {};
    if (typeof certFile !== 'string' || typeof keyFile !== 'string' || typeof clientCaFile !== 'string')
      throw new ConfigError('kubeletServer must be {certFile, keyFile, clientCaFile, port?} with paths');
    if (port !== undefined && !(typeof port === 'number' && Number.isInteger(port) && port >= 0 && port < 65_536))
      throw new ConfigError('kubeletServer.port must be a port number');
    config.kubeletServer = {
      certFile: resolve(baseDir, certFile),
      keyFile: resolve(baseDir, keyFile),
      clientCaFile: resolve(baseDir, clientCaFile),
      ...(port === undefined ? {} : { port }),
    };
  }
  const lease = raw.leaseDurationSeconds;
  if (lease !== undefined) {
    if (!isPositive(lease)) throw new ConfigError('leaseDurationSeconds must be a positive number');
    config.leaseDurationSeconds = lease;
  }
  return config;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function isPositive(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}
