import type { System } from '../src/index.ts';

/** Status codes of the invoke contract's table (docs/invoke-contract.md). */
const CONTRACT_STATUSES = new Set([200, 400, 401, 403, 404, 413, 415, 429, 500, 503, 504]);

export interface InvokeRecord {
  caller: number;
  run: string;
  invocationId: string;
  start: number;
  end: number;
  /** The HTTP status, or `connection` when no answer came. */
  status: number | 'connection';
  code: string;
  /** A defined status whose body carries the invocation ID that was sent. */
  classified: boolean;
}

/** One caller per function Run, invoking it in a loop with IDs of its own until stopped. */
export class Callers {
  readonly records: InvokeRecord[] = [];
  #stopped = false;
  #loops: Promise<void>[] = [];

  readonly system: System;
  readonly runtime: string;
  readonly runs: readonly { name: string; uid: string }[];
  readonly pauseMs: number;

  constructor(system: System, runtime: string, runs: readonly { name: string; uid: string }[], pauseMs: number) {
    this.system = system;
    this.runtime = runtime;
    this.runs = runs;
    this.pauseMs = pauseMs;
  }

  start(): void {
    this.#loops = this.runs.map(async (run, caller) => {
      for (let n = 0; !this.#stopped; n += 1) {
        await this.#invokeOnce(caller, run, `soak-c${String(caller)}-${String(n)}`);
        await new Promise((resolve) => setTimeout(resolve, this.pauseMs));
      }
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#loops);
  }

  async #invokeOnce(caller: number, run: { name: string; uid: string }, invocationId: string): Promise<void> {
    const start = Date.now();
    const base = { caller, run: run.name, invocationId, start };
    try {
      const answer = await this.system.invoke({
        runtime: this.runtime,
        uid: run.uid,
        token: this.system.token('alice'),
        body: JSON.stringify({ invocationId }),
        headers: { 'x-kruntime-invocation-id': invocationId },
      });
      const body = answer.json as { invocationId?: unknown; error?: { code?: unknown } } | undefined;
      const code = answer.status === 200 ? 'OK' : typeof body?.error?.code === 'string' ? body.error.code : '?';
      this.records.push({
        ...base,
        end: Date.now(),
        status: answer.status,
        code,
        classified: CONTRACT_STATUSES.has(answer.status) && body?.invocationId === invocationId && code !== '?',
      });
    } catch (error) {
      this.records.push({
        ...base,
        end: Date.now(),
        status: 'connection',
        code: (error as NodeJS.ErrnoException).code ?? String(error),
        classified: false,
      });
    }
  }
}

/** Task Runs created at a steady rate, every other one retrySafe. */
export class TaskCreator {
  readonly created: string[] = [];
  readonly refused: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #n = 0;

  readonly system: System;
  readonly runtime: string;
  readonly everyMs: number;

  constructor(system: System, runtime: string, everyMs: number) {
    this.system = system;
    this.runtime = runtime;
    this.everyMs = everyMs;
  }

  start(): void {
    this.#timer = setInterval(() => {
      void this.#createOne();
    }, this.everyMs);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async #createOne(): Promise<void> {
    const name = `task-${String(this.#n).padStart(5, '0')}`;
    const retrySafe = this.#n % 2 === 0;
    this.#n += 1;
    try {
      await this.system.objects.createNamespacedCustomObject({
        group: 'kruntimes.io',
        version: 'v1alpha1',
        namespace: this.system.name,
        plural: 'runs',
        body: {
          apiVersion: 'kruntimes.io/v1alpha1',
          kind: 'Run',
          metadata: { name },
          spec: {
            runtime: this.runtime,
            source: { inline: 'echo "task $KRT_RUN_NAME"; sleep 1\n' },
            mode: { task: {} },
            timeout: '2m',
            retryPolicy: retrySafe
              ? { retrySafe: true, maxAttempts: 5, initialBackoffSeconds: 1, maxBackoffSeconds: 5 }
              : { retrySafe: false },
          },
        },
      });
      this.created.push(name);
    } catch (error) {
      // The API server down (a fault): the Run was never created; counted, not lost.
      this.refused.push(`${name}: ${error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)}`);
    }
  }
}
