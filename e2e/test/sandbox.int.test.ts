import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, RUN_PLURAL, RUNTIME_PLURAL, RUNTIME_USE_VERB } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase } from '@kruntimes/run-state';
import { Sandbox, SandboxError, SandboxToolError } from '@kruntimes/sdk';
import type { SandboxOptions, SandboxWarning } from '@kruntimes/sdk';
import { kubeconfigYaml, kubeConfigFor, waitFor } from '@kruntimes/testing';
import { System } from '../src/index.ts';

// Agent sandboxes (kruntimes_sandbox through @kruntimes/sdk's Sandbox) against the real
// control plane, scheduler, runtimed and gateway, as a user who may only work with Runs.
const SESSION = join(import.meta.dirname, 'fixtures', 'sandbox-session.ts');
const AGENT_RULES = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['create', 'get', 'list', 'watch', 'delete', 'patch'] },
  { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: ['get', RUNTIME_USE_VERB] },
];

let system: System;
let agent: { kubeConfig: KubeConfig; token: string };
let scratch: string;
const open: Sandbox[] = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'sandbox-int-'));
  system = await System.start({ prefix: 'e2e-sandbox' });
  await system.createRuntime('sandbox', { language: 'python', replicas: 2, runs: 1 });
  await system.createRuntime('shared', { language: 'python', replicas: 1, runs: 2 });
  const token = await system.serviceAccountToken('agent', AGENT_RULES);
  const { server, caPem } = system.cluster.info;
  agent = { kubeConfig: kubeConfigFor({ server, caPem, user: 'agent', token }), token };
  await system.waitRuntimeReady('sandbox', 2);
}, 240_000);

afterAll(async () => {
  for (const sandbox of open) await sandbox.close().catch(() => undefined);
  await system.stop();
  await rm(scratch, { recursive: true, force: true });
});

function options(overrides: Partial<SandboxOptions> = {}): SandboxOptions {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  return {
    kubeConfig: agent.kubeConfig,
    namespace: system.name,
    runtime: 'sandbox',
    // The Runs' endpoints name the in-cluster gateway Service: reached here at its loopback address.
    gateway: { url: gateway.url, caPem: gateway.caPem },
    ...overrides,
  };
}

async function started(overrides: Partial<SandboxOptions> = {}): Promise<Sandbox> {
  const sandbox = new Sandbox(options(overrides));
  open.push(sandbox);
  return sandbox.start();
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

const runNames = async (): Promise<string[]> =>
  (
    (await system.objects.listNamespacedCustomObject({
      group: API_GROUP,
      version: 'v1alpha1',
      namespace: system.name,
      plural: RUN_PLURAL,
    })) as {
      items: Run[];
    }
  ).items.map((run) => run.metadata.name ?? '');

test('two sandboxes on a Runtime of 2 Pods with runs: 1 get one Pod each, a third stays Pending until one ends, then takes its Pod', async () => {
  const [first, second] = await Promise.all([started(), started()]);
  expect(first.name).toMatch(/^sandbox-[a-z0-9]{5}$/);
  expect(first.run?.spec.mode.function).toMatchObject({ handler: 'kruntimes_sandbox:handle', idleTimeoutSeconds: 600 });
  const pods = [first.run?.status?.assignedPod, second.run?.status?.assignedPod];
  expect(pods[0]).toBeDefined();
  expect(pods[1]).toBeDefined();
  expect(pods[0]).not.toBe(pods[1]);

  const third = new Sandbox(options());
  open.push(third);
  const thirdReady = third.start();
  const thirdName = await waitFor('the third sandbox Run to be created', () => Promise.resolve(third.name), {
    timeoutMs: 30_000,
    intervalMs: 20,
  });
  // The scheduler had time to place it: it stays Pending (no Pod has room) over several looks.
  for (let look = 0; look < 5; look += 1) {
    const run = await system.getRun(thirdName);
    expect({ look, phase: currentPhase(run), pod: run.status?.assignedPod }).toEqual({ look, phase: 'Pending', pod: undefined });
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  await first.close();
  await thirdReady;
  expect(third.run?.status?.assignedPod).toBe(pods[0]);
  await Promise.all([second.close(), third.close()]);
}, 180_000);

test('the workspace persists across tool calls of one sandbox and is gone after close(); every path escape is refused', async () => {
  const sandbox = await started();
  expect(await sandbox.writeFile('data/in.csv', 'x\n1\n2\n3\n')).toEqual({ path: 'data/in.csv', bytes: 8 });
  const run = await sandbox.execPython(
    'import os\nrows = open("data/in.csv").read().split()[1:]\nopen("sum.txt", "w").write(str(sum(map(int, rows))))\nprint(os.getcwd())',
  );
  expect(run).toMatchObject({ exitCode: 0, stderr: '', stdoutTruncated: false });
  const workspace = run.stdout.trim();
  expect(existsSync(join(workspace, 'data', 'in.csv'))).toBe(true);
  expect(await sandbox.readFile('sum.txt')).toEqual({ path: 'sum.txt', content: '6', encoding: 'utf-8', bytes: 1 });
  const bytes = Buffer.from([0, 1, 2, 255]);
  await sandbox.writeFile('bin/raw', bytes);
  expect(Buffer.from((await sandbox.readFile('bin/raw', { encoding: 'base64' })).content, 'base64')).toEqual(bytes);
  expect((await sandbox.listFiles()).entries.map((entry) => `${entry.type}:${entry.name}`)).toEqual([
    'dir:bin',
    'dir:data',
    'file:main.py',
    'file:sum.txt',
  ]);

  await sandbox.exec(`ln -s ${tmpdir()} out && ln -s /etc/hostname host`);
  const escapes: [string, Promise<unknown>][] = [
    ['absolute', sandbox.readFile('/etc/hostname')],
    ['..', sandbox.readFile('../../outside.txt')],
    ['.. on write', sandbox.writeFile('data/../../escaped.txt', 'x')],
    ['symlinked directory', sandbox.writeFile('out/escaped.txt', 'x')],
    ['symlinked file', sandbox.readFile('host')],
    ['listing through a symlink', sandbox.listFiles('out')],
  ];
  for (const [what, call] of escapes) {
    const error = await failure(call);
    expect({ what, error }).toMatchObject({ what, error: { kind: 'PathOutsideWorkspace', code: 'FunctionFailed', source: 'function' } });
    expect(error).toBeInstanceOf(SandboxToolError);
    expect((error as SandboxToolError).invocationId).toMatch(/^[0-9a-f-]{36}$/);
  }
  expect(existsSync(join(tmpdir(), 'escaped.txt'))).toBe(false);

  const name = sandbox.name ?? '';
  await sandbox.close();
  expect(existsSync(workspace)).toBe(false);
  expect(await runNames()).not.toContain(name);
  expect(await failure(sandbox.exec('true'))).toMatchObject({ code: 'Closed' });
}, 180_000);

test('a command over its time limit is answered with the bounded error, and the sandbox stays Ready', async () => {
  const sandbox = await started({ invocationTimeoutSeconds: 20 });
  const error = await failure(sandbox.exec('echo started; sleep 60', { timeoutSeconds: 2 }));
  expect(error).toBeInstanceOf(SandboxToolError);
  expect(error).toMatchObject({ kind: 'ExecTimeout', code: 'FunctionFailed', httpStatus: 500 });
  const message = (error as SandboxToolError).message;
  expect(message).toContain('timed out after 2 s');
  expect(message).toContain('--- stdout (8 bytes) ---\nstarted\n');
  const over = await failure(sandbox.exec('true', { timeoutSeconds: 19 }));
  expect(over).toMatchObject({ kind: 'InvalidToolCall' });
  expect(currentPhase(await system.getRun(sandbox.name ?? ''))).toBe('Ready');
  expect(await sandbox.exec('echo still here')).toMatchObject({ exitCode: 0, stdout: 'still here\n' });
  const loud = await sandbox.execPython('print("x" * 200000)');
  expect(loud.stdoutTruncated).toBe(true);
  expect(loud.stdout).toMatch(/\[kruntimes: output truncated: \d+ of 200001 bytes shown\]\n$/);
  await sandbox.close();
}, 120_000);

test('on a Runtime with runs: 2 the session warns, and exclusive refuses without creating anything', async () => {
  const warnings: SandboxWarning[] = [];
  const shared = new Sandbox(options({ runtime: 'shared' }));
  open.push(shared);
  shared.on('warning', (warning) => warnings.push(warning));
  await shared.start();
  expect(warnings.map((warning) => warning.code)).toEqual(['RuntimeNotExclusive']);
  expect(warnings[0]?.message).toContain('runs: 2');
  expect((await shared.exec('echo shared')).stdout).toBe('shared\n');
  await shared.close();

  const before = await runNames();
  const refused = await failure(new Sandbox(options({ runtime: 'shared', exclusive: true })).start());
  expect(refused).toBeInstanceOf(SandboxError);
  expect(refused).toMatchObject({ code: 'RuntimeNotExclusive' });
  expect(await runNames()).toEqual(before);
  // runs: 1 passes the exclusive check without a warning.
  const exclusive = new Sandbox(options({ exclusive: true }));
  open.push(exclusive);
  exclusive.on('warning', (warning) => warnings.push(warning));
  await exclusive.start();
  expect(warnings).toHaveLength(1);
  await exclusive.cancel();
  expect(currentPhase(exclusive.run ?? (await system.getRun(exclusive.name ?? '')))).toBe('Cancelled');
}, 120_000);

test('a session whose process is killed mid-loop leaves a Run that its idle timeout ends and its TTL removes', async () => {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const kubeconfig = join(scratch, 'agent.kubeconfig');
  const { server, caPem } = system.cluster.info;
  await writeFile(kubeconfig, kubeconfigYaml({ server, caPem, user: 'agent', token: agent.token }), { mode: 0o600 });
  const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', SESSION], {
    env: {
      PATH: process.env.PATH ?? '',
      KUBECONFIG: kubeconfig,
      KRT_TEST_NAMESPACE: system.name,
      KRT_TEST_RUNTIME: 'sandbox',
      KRT_TEST_IDLE_SECONDS: '3',
      KRT_TEST_TTL_SECONDS: '2',
      KRT_GATEWAY_URL: gateway.url,
      KRT_GATEWAY_CA_PEM: gateway.caPem,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => {
      resolve(signal ?? code);
    }),
  );
  let name = '';
  let calls = 0;
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      if (line.startsWith('ready ')) name = line.slice('ready '.length);
      if (line.startsWith('call ')) calls += 1;
      // Mid-loop: a few tool calls answered.
      if (calls === 3) break;
    }
  } finally {
    child.kill('SIGKILL');
  }
  expect({ signal: await exited, stderr: stderr.join('') }).toEqual({ signal: 'SIGKILL', stderr: '' });
  expect(name).toMatch(/^sandbox-/);
  const ended = await system.waitForRun(
    name,
    'the idle timeout to end the orphaned sandbox',
    (run) => currentPhase(run) !== 'Ready',
    60_000,
  );
  expect({ phase: currentPhase(ended), reason: ended.status?.reason }).toEqual({ phase: 'Timeout', reason: 'IdleTimeout' });
  await waitFor('TTL cleanup to delete the ended sandbox Run', async () => ((await runNames()).includes(name) ? undefined : true), {
    timeoutMs: 60_000,
    intervalMs: 200,
  });
}, 180_000);

// Last: after every other test sent the agent's token through every component.
test('no log line of any component contains the agent token', async () => {
  const leaks = await system.logLinesContaining([agent.token]);
  expect(leaks.map(({ file }) => file)).toEqual([]);
});
