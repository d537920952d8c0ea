// The local node agent of `dev up`: it plays the kubelet, running Runtime Pods as processes on 127.0.0.x.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, WALL_ENTRY } from '@kruntimes/testing';

export const NODE_NAME = 'krt-dev';
const SYSTEM_PYTHON = '/usr/bin/python3';
export const IMAGES = {
  runtimed: 'kruntimes/runtimed:dev',
  python: 'kruntimes/runtime-server-python:dev',
  bash: 'kruntimes/runtime-server-bash:dev',
} as const;

/**
 * The node agent's images: the repository's entry points under this Node; Run endpoints
 * point at this gateway with its CA. `kubeletServer`: the control plane's certificates for
 * the kubelet endpoint (`kubectl logs`).
 */
export function nodeAgentConfig(
  nodeDir: string,
  gatewayPort: number,
  gatewayCaFile: string,
  kubeletServer: { certFile: string; keyFile: string; clientCaFile: string },
): object {
  const image = (reference: string): string => reference.split(':')[0] ?? '';
  const entrypoint = (main: string): string[] => [process.execPath, join(REPO_ROOT, main)];
  return {
    nodeName: NODE_NAME,
    stateDir: nodeDir,
    images: {
      [image(IMAGES.runtimed)]: {
        entrypoint: entrypoint('apps/runtimed/src/main.ts'),
        env: { KRT_GATEWAY_HOST: `127.0.0.1:${String(gatewayPort)}`, KRT_GATEWAY_CA_FILE: hostPathInContainer(nodeDir, gatewayCaFile) },
      },
      // Through the images' entry, as the images start them; they open KRT_API_TOKEN_FILE as
      // the Pod names it: the node makes it the host path.
      [image(IMAGES.python)]: {
        entrypoint: [WALL_ENTRY, ...entrypoint('apps/runtime-server-python/src/main.ts')],
        pathEnv: ['KRT_API_TOKEN_FILE'],
        // The image's interpreter (Debian's), which every Run's uid can run; a version
        // manager's under a private home cannot be run by them.
        ...(existsSync(SYSTEM_PYTHON) ? { env: { KRT_PYTHON: SYSTEM_PYTHON } } : {}),
      },
      [image(IMAGES.bash)]: {
        entrypoint: [WALL_ENTRY, ...entrypoint('apps/runtime-server-bash/src/main.ts')],
        pathEnv: ['KRT_API_TOKEN_FILE'],
      },
    },
    crashLoopBackoff: { initialMs: 500, maxMs: 10_000 },
    kubeletServer,
  };
}

/**
 * A host file as a container path: runtimed opens `$KRUNTIMES_CONTAINER_ROOT/P` (the local
 * node keeps container roots under its state directory), so P climbs out of any container
 * root with more `..` than it is deep (path.join stops at `/`).
 */
export function hostPathInContainer(nodeDir: string, hostPath: string): string {
  const depth = nodeDir.split('/').filter((part) => part !== '').length + 16;
  return `/${'../'.repeat(depth)}${hostPath.replace(/^\/+/, '')}`;
}
