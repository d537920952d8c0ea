import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { KruntimesError } from '@kruntimes/errors';
import { runtimeServerV1 } from '@kruntimes/proto';
import { ClientError, Status, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';

/** How long the Runtime Server may take to say it listens. */
const START_TIMEOUT_MS = 30_000;
/** After SIGTERM, how long before SIGKILL. */
const STOP_TIMEOUT_MS = 15_000;
/** After a broken stream, how long to tell a dead Runtime Server from a live one, and how. */
const DIED_TIMEOUT_MS = 30_000;
const DIED_QUESTIONS = 100;
const QUESTION_TIMEOUT_MS = 2_000;
const QUESTION_INTERVAL_MS = 100;
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
  readonly #exited: Promise<void>;

  private constructor(child: ChildProcess, address: string, logs: string[]) {
    this.#child = child;
    this.#logs = logs;
    this.#exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else
        child.once('exit', () => {
          resolve();
        });
    });
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

  /**
   * After an Execute stream broke without its end: whether this Runtime Server died (its
   * exit seen) rather than lives on (it answers a question). A dead one's socket may close
   * before its exit is reported, so a refused question is asked again; bounded.
   */
  async died(execution: { runUid: string; attempt: number }): Promise<boolean> {
    const deadline = Date.now() + DIED_TIMEOUT_MS;
    const exited = this.#exited.then(() => 'exited' as const);
    for (let asked = 0; asked < DIED_QUESTIONS && Date.now() < deadline; asked++) {
      const question = this.client.getExecution(execution, { signal: AbortSignal.timeout(QUESTION_TIMEOUT_MS) }).then(
        () => 'answered' as const,
        // Any status but these is an answer too: the server lives.
        (error: unknown) =>
          error instanceof ClientError && error.code !== Status.UNAVAILABLE && error.code !== Status.DEADLINE_EXCEEDED
            ? ('answered' as const)
            : ('unreachable' as const),
      );
      const first = await Promise.race([question, exited]);
      if (first !== 'unreachable') return first === 'exited';
      await Promise.race([new Promise((resolve) => setTimeout(resolve, QUESTION_INTERVAL_MS)), exited]);
    }
    return this.#child.exitCode !== null || this.#child.signalCode !== null;
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
