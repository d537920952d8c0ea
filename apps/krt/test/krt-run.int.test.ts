// `krt run -f` end to end: the real CLI creates Runs from manifest files (and stdin) on the
// real control plane as alice, who may only create and read Runs; a local-node Runtime Pod
// runs them; krt prints the phase changes and a summary and exits with the code of the end.
// Ctrl-C while it waits: on a terminal (a pseudo-terminal, the Ctrl-C typed) krt asks whether
// to cancel the Run; without one it does not ask and leaves the Run running; 130 each time.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP, RUN_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { currentPhase, finishKind } from '@kruntimes/run-state';
import { NamespaceAccess, kubeconfigYaml } from '@kruntimes/testing';
import { runKrt, startKrt } from './run-krt.ts';
import type { CliResult, RunningKrt } from './run-krt.ts';

const CLI_TIMEOUT_MS = 120_000;

let system: System;
let kubeconfig: string;

beforeAll(async () => {
  system = await System.start({ prefix: 'krt-run' });
  await new NamespaceAccess(system.cluster, system.name).grantUser('alice', 'run-author', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
    // --follow reads the task's output.
    { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list'] },
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

describe('Ctrl-C while krt run waits', () => {
  const OUTPUT_WAIT_MS = 90_000;
  const sleeper = task('py', 'import time\nprint("sleeping", flush=True)\ntime.sleep(300)\n');
  const start = async (name: string, terminal: boolean, follow: boolean): Promise<RunningKrt> => {
    const file = await manifest(`${name}.yaml`, sleeper);
    const krtRun = startKrt(['run', '-f', file, '--name', name, follow ? '--follow' : '--wait', '--timeout', '150s'], {
      kubeconfig,
      namespace: system.name,
      timeoutMs: CLI_TIMEOUT_MS * 2,
      terminal,
    });
    // Ctrl-C once the Run runs (its progress line is out; with --follow, its first line too).
    await krtRun.waitForOutput(follow ? 'sleeping' : 'Running', OUTPUT_WAIT_MS);
    return krtRun;
  };
  const cancelRequested = async (name: string): Promise<boolean | undefined> => (await system.getRun(name)).spec.cancelRequested;

  test('on a terminal, answered yes (--follow): the Run is cancelled, exit 130', async () => {
    const krtRun = await start('ctrl-c-yes', true, true);
    krtRun.write('\x03');
    await krtRun.waitForOutput('cancel run/ctrl-c-yes? [y/N] ', OUTPUT_WAIT_MS);
    krtRun.write('y\r');
    expect(await krtRun.exited).toBe(130);
    expect(krtRun.output()).toContain('run/ctrl-c-yes cancel requested\r\n');
    expect(krtRun.output()).not.toContain('goes on');
    expect(await cancelRequested('ctrl-c-yes')).toBe(true);
    const ended = await system.waitForRun('ctrl-c-yes', 'finished', (run) => finishKind(currentPhase(run)) !== undefined, 90_000);
    expect(currentPhase(ended)).toBe('Cancelled');
  }, 240_000);

  test('on a terminal, answered no (--wait): the Run goes on, exit 130', async () => {
    const krtRun = await start('ctrl-c-no', true, false);
    krtRun.write('\x03');
    await krtRun.waitForOutput('cancel run/ctrl-c-no? [y/N] ', OUTPUT_WAIT_MS);
    krtRun.write('n\r');
    expect(await krtRun.exited).toBe(130);
    expect(krtRun.output()).toContain('run/ctrl-c-no goes on (krt cancel ctrl-c-no stops it)\r\n');
    expect(await cancelRequested('ctrl-c-no')).toBe(false);
    expect(currentPhase(await system.getRun('ctrl-c-no'))).toBe('Running');
    // What krt said to do stops it.
    expect((await krt(['cancel', 'ctrl-c-no'])).code).toBe(0);
  }, 240_000);

  test('on a terminal, a second Ctrl-C at the question: a no, the Run goes on, exit 130', async () => {
    const krtRun = await start('ctrl-c-twice', true, false);
    krtRun.write('\x03');
    await krtRun.waitForOutput('cancel run/ctrl-c-twice? [y/N] ', OUTPUT_WAIT_MS);
    krtRun.write('\x03');
    expect(await krtRun.exited).toBe(130);
    expect(krtRun.output()).toContain('run/ctrl-c-twice goes on (krt cancel ctrl-c-twice stops it)\r\n');
    expect(await cancelRequested('ctrl-c-twice')).toBe(false);
    expect((await krt(['cancel', 'ctrl-c-twice'])).code).toBe(0);
  }, 240_000);

  test('without a terminal (--wait): SIGINT asks nothing, the Run goes on, exit 130', async () => {
    const krtRun = await start('ctrl-c-pipe', false, false);
    krtRun.kill('SIGINT');
    expect(await krtRun.exited).toBe(130);
    expect(krtRun.output()).not.toContain('[y/N]');
    expect(krtRun.output().trimEnd().split('\n').at(-1)).toBe('run/ctrl-c-pipe goes on (krt cancel ctrl-c-pipe stops it)');
    expect(await cancelRequested('ctrl-c-pipe')).toBe(false);
    expect(currentPhase(await system.getRun('ctrl-c-pipe'))).toBe('Running');
    expect((await krt(['cancel', 'ctrl-c-pipe'])).code).toBe(0);
  }, 240_000);
});
