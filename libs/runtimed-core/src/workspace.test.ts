import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Run, SourceSnapshot } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { SourceMismatchError, Workspaces, entrypointFile, runEnv } from './workspace.ts';

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
  // Runs never enter runtimed's directories (the volume's root may be 0777).
  for (const made of [join(await workspaces.root(), UID), dir]) expect((await stat(made)).mode & 0o777).toBe(0o700);
  // Preparing again (a restart) gives the same path and content.
  expect(await workspaces.prepare(run({ inline: 'print(1)' }), 2, 'python', () => Promise.reject(new Error('not used')))).toBe(dir);
  await workspaces.remove(UID);
  await expect(stat(join(await workspaces.root(), UID))).rejects.toMatchObject({ code: 'ENOENT' });
  await workspaces.remove(UID);
});

test('a Run of before snapshots (no status.source) has its ConfigMap source read through the injected reader', async () => {
  const workspaces = new Workspaces(root);
  const dir = await workspaces.prepare(run({ configMapKeyRef: { name: 'src', key: 'main.sh' } }), 1, 'bash', (ns, name, key) =>
    Promise.resolve(`echo ${ns}/${name}/${key}`),
  );
  expect(await readFile(join(dir, 'main.sh'), 'utf8')).toBe('echo ns/src/main.sh');
});

describe('the snapshot (status.source): written only when its sha256 is the recorded one', () => {
  const V1 = 'echo v1\n';
  const snapshotOf = (text: string, configMapName?: string): SourceSnapshot => ({
    digest: `sha256:${createHash('sha256').update(text).digest('hex')}`,
    size: Buffer.byteLength(text),
    ...(configMapName === undefined ? {} : { configMapName }),
  });
  const snapshotted = (source: Run['spec']['source'], snapshot: SourceSnapshot): Run => ({ ...run(source), status: { source: snapshot } });
  const fromConfigMap = { configMapKeyRef: { name: 'src', key: 'main.sh' } };
  const reads: string[] = [];
  const reader =
    (answer: () => Promise<string>) =>
    (ns: string, name: string, key: string): Promise<string> => {
      reads.push(`${ns}/${name}/${key}`);
      return answer();
    };
  beforeEach(() => {
    reads.length = 0;
  });

  test('a ConfigMap source runs the snapshot ConfigMap (key source), never the user ConfigMap', async () => {
    const workspaces = new Workspaces(root);
    const subject = snapshotted(fromConfigMap, snapshotOf(V1, 'krt-src-aaaa'));
    const dir = await workspaces.prepare(
      subject,
      2,
      'bash',
      reader(() => Promise.resolve(V1)),
    );
    expect(reads).toEqual(['ns/krt-src-aaaa/source']);
    expect(await readFile(join(dir, 'main.sh'), 'utf8')).toBe(V1);
  });

  test('an inline source is checked against its digest too', async () => {
    const workspaces = new Workspaces(root);
    const dir = await workspaces.prepare(
      snapshotted({ inline: V1 }, snapshotOf(V1)),
      1,
      'bash',
      reader(() => Promise.reject(new Error('x'))),
    );
    expect(await readFile(join(dir, 'main.sh'), 'utf8')).toBe(V1);
    expect(reads).toEqual([]);
  });

  test.each([
    [
      'other bytes in the snapshot ConfigMap (recreated)',
      fromConfigMap,
      'krt-src-aaaa',
      () => Promise.resolve('echo tampered\n'),
      /snapshot ConfigMap krt-src-aaaa: the source to run is sha256:/,
    ],
    [
      'the snapshot ConfigMap or its key gone',
      fromConfigMap,
      'krt-src-aaaa',
      () => Promise.reject(new KruntimesError('InvalidRequest', 'ConfigMap ns/krt-src-aaaa has no key source')),
      /cannot be read: ConfigMap ns\/krt-src-aaaa has no key source/,
    ],
    [
      'the snapshot ConfigMap gone (404)',
      fromConfigMap,
      'krt-src-aaaa',
      () => Promise.reject(Object.assign(new Error('HTTP 404'), { code: 404 })),
      /cannot be read: HTTP 404/,
    ],
    [
      'an inline source that is not the recorded one',
      { inline: 'echo other\n' },
      undefined,
      () => Promise.resolve(''),
      /spec.source.inline: the source to run is/,
    ],
  ] as const)('%s: SourceMismatchError (terminal), no workspace written', async (_name, source, configMapName, answer, message) => {
    const workspaces = new Workspaces(root);
    const refused = workspaces.prepare(snapshotted(source, snapshotOf(V1, configMapName)), 1, 'bash', reader(answer));
    await expect(refused).rejects.toThrow(SourceMismatchError);
    await expect(refused).rejects.toMatchObject({
      code: 'SourceMismatch',
      terminal: true,
      message: expect.stringMatching(message) as unknown,
    });
    await expect(stat(await workspaces.attemptDir(UID, 1))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('any other read error is not a mismatch: the reconcile retries it', async () => {
    const workspaces = new Workspaces(root);
    const subject = snapshotted(fromConfigMap, snapshotOf(V1, 'krt-src-aaaa'));
    const failed = workspaces.prepare(
      subject,
      1,
      'bash',
      reader(() => Promise.reject(Object.assign(new Error('HTTP 503'), { code: 503 }))),
    );
    await expect(failed).rejects.toThrow('HTTP 503');
    await expect(failed).rejects.not.toBeInstanceOf(SourceMismatchError);
  });
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
