// Runs the krt CLI as a user would: its own process, one kubeconfig file, no KUBECONFIG
// from the test's environment, killed if it outlives the timeout.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '@kruntimes/testing';

const MAIN = join(REPO_ROOT, 'apps/krt/src/main.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface KrtOptions {
  kubeconfig: string;
  /** Passed as `-n` before the args. */
  namespace?: string;
  stdin?: string;
  timeoutMs: number;
}

export async function runKrt(args: readonly string[], options: KrtOptions): Promise<CliResult> {
  const namespace = options.namespace === undefined ? [] : ['-n', options.namespace];
  const child = spawn(process.execPath, [MAIN, '--kubeconfig', options.kubeconfig, ...namespace, ...args], {
    env: { ...process.env, KUBECONFIG: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(options.stdin ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  try {
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}
