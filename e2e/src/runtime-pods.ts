// Runtime Pods of a system: the local node agent runs them as real processes on 127.0.0.x.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { LocalNode } from '@kruntimes/local-node';
import type { ImageCommand, KubeletServerConfig } from '@kruntimes/local-node';
import { REPO_ROOT } from '@kruntimes/testing';
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
}

/**
 * Node flags for the gateway, runtimed and Runtime Server processes a system starts, from the environment
 * variable KRT_E2E_NODE_OPTIONS (unset: none), e.g. to profile them under a benchmark:
 * `KRT_E2E_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/prof'`.
 */
export function childNodeOptions(): string | undefined {
  const value = process.env.KRT_E2E_NODE_OPTIONS;
  return value === undefined || value === '' ? undefined : value;
}

/** What each image of the workload runs as: the repository's own entry points under this Node. */
function images(podEnv: Record<string, string> | undefined): Record<string, ImageCommand> {
  const entrypoint = (main: string): string[] => [process.execPath, join(REPO_ROOT, main)];
  const nodeOptions = childNodeOptions();
  const runtimedEnv = nodeOptions === undefined ? podEnv : { NODE_OPTIONS: nodeOptions, ...podEnv };
  const server = (main: string): ImageCommand => ({
    entrypoint: entrypoint(main),
    ...(nodeOptions === undefined ? {} : { env: { NODE_OPTIONS: nodeOptions } }),
  });
  return {
    'kruntimes/runtimed': {
      entrypoint: entrypoint('apps/runtimed/src/main.ts'),
      ...(runtimedEnv === undefined ? {} : { env: runtimedEnv }),
    },
    'kruntimes/runtime-server-python': server('apps/runtime-server-python/src/main.ts'),
    'kruntimes/runtime-server-bash': server('apps/runtime-server-bash/src/main.ts'),
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
      images: images(options.podEnv),
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
