// Runtime Pods of a system: the local node agent runs them as real processes on 127.0.0.x.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { LocalNode } from '@kruntimes/local-node';
import type { ImageCommand, KubeletServerConfig } from '@kruntimes/local-node';
import { REPO_ROOT, WALL_ENTRY } from '@kruntimes/testing';
import { fileLogger } from './logs.ts';

export interface RuntimePodsOptions {
  /** The node's name and the only namespace it serves: one node per test namespace. */
  namespace: string;
  /** State (container roots, projected tokens) under `<dir>/node`, the agent's log under `<dir>/logs`. */
  dir: string;
  /** Extra environment of every runtimed container (an image ENV: the Pod's own env wins). */
  podEnv?: Record<string, string>;
  /** The kubelet endpoint's certificates (`ClusterInfo.kubeletServer`): `kubectl logs` of the Runtime Pods works. */
  kubeletServer?: KubeletServerConfig;
  /**
   * The Python Runtime Server's interpreter (KRT_PYTHON): walled Pods' Runs need one their
   * uids can run, as the image's Debian python3 is (a version manager's under /root is not).
   */
  python?: string;
}

/**
 * Node flags for the gateway, runtimed and Runtime Server processes a system starts, from the environment
 * variable KRT_E2E_NODE_OPTIONS (unset: none), e.g. to profile them under a benchmark:
 * `KRT_E2E_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/prof'`. Given on the command line
 * (split at whitespace), not as NODE_OPTIONS: a Pod's own NODE_OPTIONS (the heap flags the
 * controller-manager derives from the container's memory limit) apply beside them.
 */
export function childNodeOptions(): string[] {
  const value = process.env.KRT_E2E_NODE_OPTIONS?.trim();
  return value === undefined || value === '' ? [] : value.split(/\s+/);
}

/**
 * The entry point of an app a system runs (`apps/runtimed`): its TypeScript sources
 * (`src/main.ts`, type-stripped at start), which every test runs, or with
 * KRT_E2E_ENTRYPOINTS=bundle its bundled build (`dist/bundle/<app>/main.mjs`, what the
 * images ship; `npx nx run <app>:bundle` writes it), which the footprint bench measures.
 */
export function appEntrypoint(app: string): string {
  if (process.env.KRT_E2E_ENTRYPOINTS !== 'bundle') return join(REPO_ROOT, app, 'src', 'main.ts');
  const bundle = join(REPO_ROOT, 'dist', 'bundle', app, 'main.mjs');
  if (!existsSync(bundle)) throw new Error(`KRT_E2E_ENTRYPOINTS=bundle: no ${bundle}; build it with npx nx run-many -t bundle`);
  return bundle;
}

/** The Runtime Servers open their API token file as the Pod names it (runtimed joins KRUNTIMES_CONTAINER_ROOT itself). */
const RUNTIME_SERVER_PATH_ENV = ['KRT_API_TOKEN_FILE'];

/**
 * What each image of the workload runs as: the repository's own entry points under this
 * Node, the Runtime Servers through their images' entry (walls a hostUsers: false Pod's Runs).
 */
function images(podEnv: Record<string, string> | undefined, python: string | undefined): Record<string, ImageCommand> {
  const entrypoint = (app: string): string[] => [process.execPath, ...childNodeOptions(), appEntrypoint(app)];
  const server = (app: string): ImageCommand => ({ entrypoint: [WALL_ENTRY, ...entrypoint(app)], pathEnv: RUNTIME_SERVER_PATH_ENV });
  return {
    'kruntimes/runtimed': { entrypoint: entrypoint('apps/runtimed'), ...(podEnv === undefined ? {} : { env: podEnv }) },
    'kruntimes/runtime-server-python': {
      ...server('apps/runtime-server-python'),
      ...(python === undefined ? {} : { env: { KRT_PYTHON: python } }),
    },
    'kruntimes/runtime-server-bash': server('apps/runtime-server-bash'),
  };
}

/** A started local node for one namespace; stopping it deletes its Node object and stops every Pod process. */
export async function startRuntimePods(admin: KubeConfig, options: RuntimePodsOptions): Promise<LocalNode> {
  const { namespace, dir } = options;
  const node = new LocalNode(
    admin,
    {
      nodeName: namespace,
      stateDir: join(dir, 'node'),
      namespaces: [namespace],
      images: images(options.podEnv, options.python),
      crashLoopBackoff: { initialMs: 100, maxMs: 1_000 },
      ...(options.kubeletServer === undefined ? {} : { kubeletServer: options.kubeletServer }),
    },
    { deleteNodeOnStop: true, logger: fileLogger(join(dir, 'logs', 'local-node.log'), 'local-node') },
  );
  await node.start();
  return node;
}

/** Pods get a few seconds to stop (their termination grace) before SIGKILL. */
export const RUNTIME_POD_STOP_GRACE_MS = 3_000;

/** The service-account tokens the local node projected into the Runtime Pods (runtimed's own credential). */
export async function projectedTokens(dir: string): Promise<string[]> {
  const entries = await readdir(join(dir, 'node'), { withFileTypes: true, recursive: true }).catch(() => []);
  const tokens = await Promise.all(
    entries
      .filter((entry) => entry.isFile() && entry.name === 'token')
      .map((entry) => readFile(join(entry.parentPath, entry.name), 'utf8').catch(() => '')),
  );
  return tokens.map((token) => token.trim()).filter((token) => token.length > 0);
}
