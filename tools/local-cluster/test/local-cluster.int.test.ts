// The command as a user runs it: a real control plane in the foreground, kubeconfigs in
// --dir, a clean stop on SIGTERM that leaves no process and no state behind.
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '@kruntimes/testing';
import type { ClusterInfo } from '@kruntimes/testing';
import { ensureInternalCa } from '../src/index.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

/** Live processes whose command line mentions `text` (Linux /proc). */
function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) found.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return found;
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kruntimes-local-cluster-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('writes a kubeconfig per user, serves, and stops cleanly on SIGTERM', async () => {
  const command = spawn(process.execPath, ['--no-warnings', MAIN, '--dir', dir, '--no-crds'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  command.stderr.setEncoding('utf8');
  command.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = once(command, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  try {
    await waitFor(
      'the command to report that it is up',
      () => {
        if (command.exitCode !== null) throw new Error(`exited early with ${command.exitCode}:\n${stderr}`);
        return Promise.resolve(stderr.includes('stop with SIGTERM') ? true : undefined);
      },
      { timeoutMs: 90_000, intervalMs: 100 },
    );
    const info = JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')) as ClusterInfo;
    expect(existsSync(info.dir)).toBe(true);
    expect(processesMentioning(info.dir).length).toBeGreaterThanOrEqual(3);
    // The internal CA for a controller-manager's --internal-ca-dir, made once in DIR/internal-ca.
    const ca = await ensureInternalCa(join(dir, 'internal-ca'));
    expect(new X509Certificate(ca.certPem).ca).toBe(true);
    expect(stderr).toContain(`internal CA: ${join(dir, 'internal-ca')}`);

    for (const user of ['admin', 'alice', 'bob']) {
      const config = new KubeConfig();
      config.loadFromFile(join(dir, `${user}.kubeconfig`));
      expect(config.getCurrentUser()?.name).toBe(user);
      expect(config.getCurrentCluster()?.server).toBe(info.server);
    }
    const admin = new KubeConfig();
    admin.loadFromFile(join(dir, 'admin.kubeconfig'));
    const namespaces = await admin.makeApiClient(CoreV1Api).listNamespace();
    expect(namespaces.items.map((n) => n.metadata?.name)).toContain('default');

    command.kill('SIGTERM');
    const [code] = await exited;
    expect({ code, stderr }).toEqual({ code: 0, stderr: expect.stringContaining('[local-cluster] stopped') as string });
    expect(existsSync(info.dir)).toBe(false);
    expect(processesMentioning(info.dir)).toEqual([]);
  } finally {
    command.kill('SIGKILL'); // no-op once it exited; the watchdog cleans up after it otherwise
  }
});
