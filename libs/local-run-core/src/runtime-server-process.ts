import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { KruntimesError } from '@kruntimes/errors';
import { runtimeServerV1 } from '@kruntimes/proto';
import { createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';

/** How long the Runtime Server may take to say it listens. */
const START_TIMEOUT_MS = 30_000;
/** After SIGTERM, how long before SIGKILL. */
const STOP_TIMEOUT_MS = 15_000;
/** Log lines of the Runtime Server kept to explain a failure. */
const KEPT_LOG_LINES = 50;

/** Which program serves a language: the repository's own Runtime Server adapters. */
export interface RuntimeServerCommand {
  /** The Node.js binary (process.execPath). */
  node: string;
  /** apps/runtime-server-<language>/src/main.ts */
  main: string;
}

/**
 * A real Runtime Server (`apps/runtime-server-python|bash`) as a child process on a
 * loopback address with an ephemeral port, started as runtimed's Pod starts it, spoken
 * to over its gRPC API. Its JSON log stays in memory (the last lines) and is shown only
 * when it fails: it is never written into the run directory.
 */
export class RuntimeServerProcess {
  readonly client: Client<runtimeServerV1.RuntimeServerDefinition>;
  readonly #child: ChildProcess;
  readonly #channel: Channel;
  readonly #logs: string[];

  private constructor(child: ChildProcess, address: string, logs: string[]) {
    this.#child = child;
    this.#logs = logs;
    this.#channel = createChannel(address);
    this.client = createClient(runtimeServerV1.RuntimeServerDefinition, this.#channel);
  }

  static async start(command: RuntimeServerCommand): Promise<RuntimeServerProcess> {
    const host = '127.0.0.1';
    const child = spawn(command.node, [command.main, '--listen', `${host}:0`], {
      // Not krt's environment (it may hold credentials): what an interpreter needs, as in a Runtime Pod.
      env: { ...inheritedEnv(), KRT_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs: string[] = [];
    const keep = (line: string): void => {
      logs.push(line);
      if (logs.length > KEPT_LOG_LINES) logs.shift();
    };
    createInterface({ input: child.stderr }).on('line', keep);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new KruntimesError('Internal', `the Runtime Server did not start within ${START_TIMEOUT_MS / 1000} s:\n${logs.join('\n')}`));
      }, START_TIMEOUT_MS);
      createInterface({ input: child.stdout }).on('line', (line) => {
        keep(line);
        let entry: { msg?: unknown; port?: unknown };
        try {
          entry = JSON.parse(line) as { msg?: unknown; port?: unknown };
        } catch {
          return;
        }
        if (entry.msg === 'runtime server listening' && typeof entry.port === 'number') {
          clearTimeout(timer);
          resolve(entry.port);
        }
      });
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(new KruntimesError('Internal', `the Runtime Server could not be started (${command.main}): ${error.message}`));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new KruntimesError(
            'Internal',
            `the Runtime Server exited with ${String(code ?? signal)} before it listened:\n${logs.join('\n')}`,
          ),
        );
      });
    });
    return new RuntimeServerProcess(child, `${host}:${String(port)}`, logs);
  }

  /** The last log lines, to explain a failure. */
  get logTail(): string {
    return this.#logs.join('\n');
  }

  /** SIGTERM (it ends every execution), SIGKILL after a bounded wait. */
  async stop(): Promise<void> {
    this.#channel.close();
    const child = this.#child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        resolve();
      });
    });
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
}

const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'USER', 'KRT_PYTHON'] as const;

function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
