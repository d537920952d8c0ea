import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PartFailure } from './dev-parts.ts';

export interface DevComponent {
  /** Also its process group (every component runs in its own). */
  pid: number;
  log: string;
}

/** `<dir>/state.json`: what `down`, `status`, `env` and `logs` read from another terminal. */
export interface DevState {
  /** The `up` process that started and stops everything. */
  supervisorPid: number;
  dir: string;
  phase: 'starting' | 'ready' | 'stopping';
  startedAt: string;
  controlPlaneDir?: string;
  apiServer?: string;
  /** admin (system:masters) */
  kubeconfig?: string;
  /** The demo's non-admin ServiceAccount (only get on Runs in demo). */
  invokerKubeconfig?: string;
  gatewayUrl?: string;
  gatewayCaFile?: string;
  /** Where the services export spans, known from their start on (absent with --no-jaeger). */
  jaegerOtlpEndpoint?: string;
  /** Jaeger's query API and UI (absent with --no-jaeger). */
  jaegerUrl?: string;
  /** Prometheus's HTTP API and UI (absent with --no-prometheus). */
  prometheusUrl?: string;
  /** The S3 API of the local object store (SeaweedFS). */
  objectStoreEndpoint?: string;
  /** Node agent stateDir: Pod directories and container logs. */
  nodeDir?: string;
  components: Record<string, DevComponent>;
  /** The parts beside the demo that failed (object-store, jaeger, prometheus), each with why and its log. */
  failed?: Record<string, PartFailure>;
  /** Every listening socket of the environment once it was ready, host:port. */
  listening?: string[];
  /** Their inodes, in the same order: a stop checks that these very sockets closed. */
  listeningInodes?: string[];
}

export const stateFile = (dir: string): string => join(dir, 'state.json');

export async function readState(dir: string): Promise<DevState | undefined> {
  try {
    return JSON.parse(await readFile(stateFile(dir), 'utf8')) as DevState;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

export async function writeState(state: DevState): Promise<void> {
  const path = stateFile(state.dir);
  const temporary = `${path}.${String(process.pid)}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}
