import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api } from '@kubernetes/client-node';
import { ADMIN_USER, Cluster, kubeconfigYaml, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';

// The agent as the local cluster runs it: a process of its own (main.ts). Whatever ends
// it, SIGTERM or SIGKILL, no process of its Pods may outlive it.
const cluster = Cluster.fromEnvironment();
const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const TEST_SERVER = join(import.meta.dirname, 'fixtures', 'test-server.ts');
const WAIT = { timeoutMs: 60_000, intervalMs: 200 };

let namespace: TestNamespace;
let dir: string;
let agent: ChildProcess | undefined;

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'agent-process', waitForDefaultServiceAccount: true });
  dir = await mkdtemp(join(tmpdir(), 'local-node-agent-'));
});

afterEach(async () => {
  if (agent?.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
  await namespace.delete();
});

async function startAgent(): Promise<ChildProcess> {
  const user = cluster.user(ADMIN_USER);
  await writeFile(
    join(dir, 'admin.kubeconfig'),
    kubeconfigYaml({ server: cluster.server, caPem: cluster.info.caPem, user: user.name, token: user.token }),
  );
  await writeFile(
    join(dir, 'node.json'),
    JSON.stringify({
      nodeName: namespace.name,
      stateDir: join(dir, 'state'),
      namespaces: [namespace.name],
      images: { 'kruntimes.test/test-server': { entrypoint: [process.execPath, TEST_SERVER] } },
    }),
  );
  const child = spawn(process.execPath, [MAIN, '--config', join(dir, 'node.json'), '--kubeconfig', join(dir, 'admin.kubeconfig')], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('the agent did not report ready within 30 s'));
    }, 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('ready ')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the agent exited with ${String(code)}`));
    });
  });
  return child;
}

/** PIDs of live processes whose environment carries this Pod UID (downward API). */
async function podProcesses(uid: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = await readFile(`/proc/${entry}/environ`, 'utf8');
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      if (environ.split('\0').includes(`POD_UID=${uid}`) && stat.split(') ')[1]?.startsWith('Z') !== true) pids.push(Number(entry));
    } catch {
      // The process ended while we read it: not alive.
    }
  }
  return pids;
}

async function runningPod(): Promise<string> {
  await core.createNamespacedPod({
    namespace: namespace.name,
    body: {
      metadata: { name: 'server' },
      spec: {
        containers: [
          {
            name: 'server',
            image: 'kruntimes.test/test-server',
            env: [
              { name: 'PORT', value: '8080' },
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
            ],
          },
        ],
      },
    },
  });
  const pod = await waitFor(
    'the Pod to run',
    async () => {
      const current = await core.readNamespacedPod({ namespace: namespace.name, name: 'server' });
      return current.status?.phase === 'Running' ? current : undefined;
    },
    WAIT,
  );
  const uid = pod.metadata?.uid ?? '';
  await waitFor('the container process', async () => ((await podProcesses(uid)).length > 0 ? true : undefined), WAIT);
  return uid;
}

test.each(['SIGTERM', 'SIGKILL'] as const)('no Pod process outlives the agent process ended by %s', async (signal) => {
  agent = await startAgent();
  const uid = await runningPod();
  const exited = new Promise((resolve) => agent?.once('exit', resolve));
  agent.kill(signal);
  await exited;
  await waitFor('every Pod process to end', async () => ((await podProcesses(uid)).length === 0 ? true : undefined), WAIT);
});
