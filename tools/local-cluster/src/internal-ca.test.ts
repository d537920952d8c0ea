import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureInternalCa } from './index.ts';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'local-cluster-ca-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

test('makes the CA once (ca.key 0600) and returns the same one afterwards', async () => {
  const dir = join(root, 'internal-ca');
  const first = await ensureInternalCa(dir);
  expect(new X509Certificate(first.certPem).ca).toBe(true);
  expect((await stat(join(dir, 'ca.key'))).mode & 0o777).toBe(0o600);
  expect((await stat(dir)).mode & 0o077).toBe(0);
  expect(await ensureInternalCa(dir)).toEqual(first);
});

test.each([
  [
    'only ca.crt left',
    async (dir: string) => {
      await unlink(join(dir, 'ca.key'));
    },
    /only one of/,
  ],
  [
    'a broken key',
    async (dir: string) => {
      await writeFile(join(dir, 'ca.key'), 'nope');
    },
    /unusable/,
  ],
])('refuses %s instead of replacing the CA', async (_what, damage, message) => {
  const dir = join(root, 'internal-ca');
  await ensureInternalCa(dir);
  await damage(dir);
  await expect(ensureInternalCa(dir)).rejects.toThrow(message);
});
