// `krt run -f` end to end: the real CLI creates Runs from manifest files (and stdin) on the
// real control plane as alice, who may only create and read Runs; a local-node Runtime Pod
// runs them; krt prints the phase changes and a summary and exits with the code of the end.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP, RUN_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { NamespaceAccess, kubeconfigYaml } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const CLI_TIMEOUT_MS = 120_000;

let system: System;
let kubeconfig: string;

beforeAll(async () => {
  system = await System.start({ prefix: 'krt-run' });
  await new NamespaceAccess(system.cluster, system.name).grantUser('alice', 'run-author', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
    // Creating a Run needs `use` on its Runtime (the admission policy).
    ...RUNTIME_USER_RULES,
  ]);
  kubeconfig = join(system.dir, 'alice.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user: 'alice', token: system.token('alice') }),
    { mode: 0o600 },
  );
  await system.createRuntime('py', { language: 'python', runs: 4 });
  await system.createRuntime('sh', { language: 'bash', runs: 4 });
}, 180_000);

afterAll(async () => {
  await system.stop();
});

async function krt(args: string[], stdin?: string): Promise<CliResult> {
  return runKrt(args, { kubeconfig, namespace: system.name, timeoutMs: CLI_TIMEOUT_MS, ...(stdin === undefined ? {} : { stdin }) });
}

async function manifest(file: string, text: string): Promise<string> {
  const path = join(system.dir, file);
  await writeFile(path, text);
  return path;
}

const task = (runtime: string, source: string, extra = ''): string =>
  `apiVersion: kruntimes.io/v1alpha1\nkind: Run\nspec:\n  runtime: ${runtime}\n  source:\n    inline: ${JSON.stringify(source)}\n  mode: {task: {}}\n${extra}`;

test('a Python task that succeeds: created with a name from the file, its phases, its summary, exit 0', async () => {
  const file = await manifest('report.yaml', task('py', 'print("hello from krt run")\n'));
  const result = await krt(['run', '-f', file, '--wait', '--timeout', '90s']);
  if (result.code !== 0) process.stderr.write(`${result.stderr}\n${await system.diagnose()}\n`);
  expect(result.code).toBe(0);
  const name = /^run\/(report-[a-z0-9]{5}) created\n$/.exec(result.stdout)?.[1];
  expect(name).toBeDefined();
  // Every phase the Run went through, in order, each once; the summary last.
  expect(result.stderr).toMatch(/^ +\+\d+\.\ds {2}Pending\n/);
  expect(result.stderr).toMatch(/ +\+\d+\.\ds {2}Succeeded/);
  expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(new RegExp(`^run/${name ?? ''}: Succeeded \\(.*exit code 0\\)`));
}, 180_000);

test('a Bash task that exits 3, named on the command line and read from stdin: Failed, exit 1', async () => {
  const result = await krt(
    ['run', '-f', '-', '--name', 'bash-fails', '--wait', '--timeout', '90s'],
    task('sh', 'echo about to fail >&2\nexit 3\n'),
  );
  expect(result.stdout).toBe('run/bash-fails created\n');
  expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^run\/bash-fails: Failed \(.*exit code 3\)/);
  expect(result.code).toBe(1);
}, 180_000);

test('a task past its timeout: Timeout, exit 5', async () => {
  const file = await manifest('slow.yaml', task('py', 'import time\ntime.sleep(60)\n', '  timeout: 2s\n'));
  const result = await krt(['run', '-f', file, '--name', 'too-slow', '--wait', '--timeout', '90s']);
  expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^run\/too-slow: Timeout/);
  expect(result.code).toBe(5);
}, 180_000);

test('without --wait: created, exit 0 at once; bad manifests and a Run the API server refuses are exit 2', async () => {
  const quick = await krt(['run', '-f', await manifest('quick.yaml', task('py', 'print(1)\n'))]);
  expect(quick).toMatchObject({ code: 0, stdout: expect.stringMatching(/^run\/quick-[a-z0-9]{5} created\n$/) as string, stderr: '' });

  const pod = await krt(['run', '-f', await manifest('pod.yaml', 'apiVersion: v1\nkind: Pod\nspec: {}\n')]);
  expect(pod).toMatchObject({ code: 2, stderr: expect.stringContaining('kind must be Run, not "Pod"') as string });

  // Valid YAML, but no source: the CRD's schema refuses it (422).
  const invalid = await krt([
    'run',
    '-f',
    await manifest('invalid.yaml', 'apiVersion: kruntimes.io/v1alpha1\nkind: Run\nspec:\n  runtime: py\n  mode: {task: {}}\n'),
  ]);
  expect(invalid.code).toBe(2);
  expect(invalid.stderr).toMatch(/^error: the API server answered HTTP 422: .*source/);

  const missing = await krt(['run', '-f', join(system.dir, 'nowhere.yaml')]);
  expect(missing).toMatchObject({ code: 2, stderr: expect.stringContaining('cannot read') as string });
}, 180_000);
