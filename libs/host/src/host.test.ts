import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupAlive, pathExists, signalGroup } from './index.ts';

describe('pathExists', () => {
  it('tells an existing path from a missing one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'host-test-'));
    try {
      expect(await pathExists(dir)).toBe(true);
      expect(await pathExists(join(dir, 'missing'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('signalGroup', () => {
  it.each([0, 1, -5])('never signals group %d', (pgid) => {
    expect(signalGroup(pgid, 0)).toBe(false);
  });

  it('signals a live group and reports a gone one', async () => {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const pid = child.pid ?? 0;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    expect(groupAlive(pid)).toBe(true);
    expect(signalGroup(pid, 'SIGKILL')).toBe(true);
    await exited;
    expect(groupAlive(pid)).toBe(false);
  });
});
