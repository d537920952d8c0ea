import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Run } from '@kruntimes/api';
import { Workspaces, entrypointFile, runEnv } from './workspace.ts';

const UID = '33333333-3333-4333-8333-333333333333';
const run = (source: Run['spec']['source']): Run => ({
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'Run',
  metadata: { name: 'r', namespace: 'ns', uid: UID },
  spec: {
    runtime: 'rt',
    source,
    mode: { task: {} },
    env: [
      { name: 'A', value: '1' },
      { name: 'KRT_ATTEMPT', value: 'spoofed' },
    ],
  },
});

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'ws-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

test('the attempt workspace is a pure function of UID and attempt and holds the source as the entrypoint', async () => {
  const workspaces = new Workspaces(join(root, 'workspaces'));
  const dir = await workspaces.prepare(run({ inline: 'print(1)' }), 2, 'python', () => Promise.reject(new Error('not used')));
  expect(dir).toBe(join(await workspaces.root(), UID, '2'));
  expect(await readFile(join(dir, entrypointFile('python')), 'utf8')).toBe('print(1)');
  // Preparing again (a restart) gives the same path and content.
  expect(await workspaces.prepare(run({ inline: 'print(1)' }), 2, 'python', () => Promise.reject(new Error('not used')))).toBe(dir);
  await workspaces.remove(UID);
  await expect(stat(join(await workspaces.root(), UID))).rejects.toMatchObject({ code: 'ENOENT' });
  await workspaces.remove(UID);
});

test('a ConfigMap source is read through the injected reader', async () => {
  const workspaces = new Workspaces(root);
  const dir = await workspaces.prepare(run({ configMapKeyRef: { name: 'src', key: 'main.sh' } }), 1, 'bash', (ns, name, key) =>
    Promise.resolve(`echo ${ns}/${name}/${key}`),
  );
  expect(await readFile(join(dir, 'main.sh'), 'utf8')).toBe('echo ns/src/main.sh');
});

test('a UID that is not a UID never becomes a path', async () => {
  const workspaces = new Workspaces(root);
  await expect(workspaces.attemptDir('../../etc', 1)).rejects.toThrow(/not a safe path segment/);
});

test('the environment is spec.env plus KRT_* variables, which win', () => {
  expect(runEnv(run({ inline: '' }), 'rt', 3)).toEqual({
    A: '1',
    KRT_ATTEMPT: '3',
    KRT_RUN_NAME: 'r',
    KRT_RUN_NAMESPACE: 'ns',
    KRT_RUN_UID: UID,
    KRT_RUNTIME: 'rt',
  });
});
