import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '@kruntimes/testing';
import { resolvePython } from '../src/python-adapter.ts';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');

// Needs root: the walled Runtime Server switches to the Runs' uids.
(process.getuid?.() === 0 ? describe : describe.skip)('a walled Python Runtime Server (KRT_RUN_UIDS)', () => {
  let privateDir: string;

  beforeEach(() => {
    // mkdtemp's 0700: only this server's user passes, as /root is for a version manager's interpreters.
    privateDir = mkdtempSync(join(tmpdir(), 'rs-private-python-'));
  });

  afterEach(() => {
    rmSync(privateDir, { recursive: true, force: true });
  });

  it('refuses to start, saying why, when the Runs cannot run its interpreter', async () => {
    const python = join(privateDir, 'python3');
    symlinkSync(resolvePython(), python);
    const started = startServerProcess(MAIN, { KRT_RUN_UIDS: '3800200-3800209', KRT_PYTHON: python }, undefined, {
      throughWallEntry: true,
    });
    await expect(started).rejects.toThrow(/cannot run .*python3 -c pass .*private to this server's user/);
  });
});
