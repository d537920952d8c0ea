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
  /** A released krt (one executable file, an npm package's bin) run with `env` in `cwd`, instead of the workspace's. */
  released?: { executable: string; env: NodeJS.ProcessEnv; cwd: string };
}

export async function runKrt(args: readonly string[], options: KrtOptions): Promise<CliResult> {
  const namespace = options.namespace === undefined ? [] : ['-n', options.namespace];
  const argv = ['--kubeconfig', options.kubeconfig, ...namespace, ...args];
  const { released } = options;
  const child =
    released === undefined
      ? spawn(process.execPath, [MAIN, ...argv], { env: { ...process.env, KUBECONFIG: '' }, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(released.executable, argv, { env: released.env, cwd: released.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
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

/** A krt process the test talks to while it runs: its output so far, its input, its end. */
export interface RunningKrt {
  /** stdout and stderr so far (one stream on a terminal, where both go). */
  output(): string;
  write(text: string): void;
  /** Sends `signal` to the krt process itself (without a terminal; on one, a typed Ctrl-C is written instead). */
  kill(signal: NodeJS.Signals): void;
  /** Resolves once the output holds `text` (bounded by `timeoutMs`; fails with the output so far). */
  waitForOutput(text: string, timeoutMs: number): Promise<void>;
  exited: Promise<number | null>;
}

/**
 * Starts krt and returns while it runs. With `terminal`, krt runs on a pseudo-terminal of
 * its own (util-linux `script`, the process on the terminal's foreground, stdin, stdout and
 * stderr a TTY): what the test writes is typed, so `\x03` is a Ctrl-C the terminal turns
 * into SIGINT; the output is the terminal's (echo, CR LF). Without, plain pipes.
 */
export function startKrt(args: readonly string[], options: KrtOptions & { terminal: boolean }): RunningKrt {
  const namespace = options.namespace === undefined ? [] : ['-n', options.namespace];
  const argv = [process.execPath, MAIN, '--kubeconfig', options.kubeconfig, ...namespace, ...args];
  const env = { ...process.env, KUBECONFIG: '' };
  const child = options.terminal
    ? // -e: script exits with krt's code; the typescript file is thrown away.
      spawn('script', ['-q', '-e', '-c', `exec ${argv.map(shellQuote).join(' ')}`, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(argv[0] ?? '', argv.slice(1), { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: string): void => {
    output += chunk;
    for (const wake of waiters) wake();
  };
  child.stdout.setEncoding('utf8').on('data', onData);
  child.stderr.setEncoding('utf8').on('data', onData);
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  const exited = new Promise<number | null>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      for (const wake of waiters) wake();
      resolve(code);
    });
  });
  return {
    output: () => output,
    write: (text) => {
      child.stdin.write(text);
    },
    kill: (signal) => {
      child.kill(signal);
    },
    exited,
    waitForOutput: async (text, timeoutMs) => {
      let wake: () => void = () => undefined;
      try {
        await new Promise<void>((resolve, reject) => {
          const deadline = setTimeout(() => {
            reject(new Error(`krt ${args.join(' ')} never wrote ${JSON.stringify(text)}; its output: ${JSON.stringify(output)}`));
          }, timeoutMs);
          wake = () => {
            if (output.includes(text)) {
              clearTimeout(deadline);
              resolve();
            } else if (child.exitCode !== null || child.signalCode !== null) {
              clearTimeout(deadline);
              reject(
                new Error(`krt ${args.join(' ')} ended before writing ${JSON.stringify(text)}; its output: ${JSON.stringify(output)}`),
              );
            }
          };
          waiters.add(wake);
          wake();
        });
      } finally {
        waiters.delete(wake);
      }
    },
  };
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}
