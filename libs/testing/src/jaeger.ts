import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Watchdog } from '@kruntimes/host';
import { ensureBinaries } from './binaries.ts';
import { ControlPlaneError } from './errors.ts';
import { ManagedProcess } from './managed-process.ts';
import { LOOPBACK, freePorts } from './ports.ts';

export interface JaegerOptions {
  /** Directory with `jaeger-all-in-one`; default: ensureBinaries(). */
  binDir?: string;
  /** Bound on the start, binaries excluded. Default 30 s. */
  startTimeoutMs?: number;
}

/** A span as Jaeger's query API (`/api/traces`) returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  /** Microseconds since the epoch, and the span's length in microseconds. */
  startTime?: number;
  duration?: number;
  tags: { key: string; type: string; value: unknown }[];
  processID: string;
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

const START_ATTEMPTS = 3;
const REQUEST_TIMEOUT_MS = 5_000;

/**
 * Jaeger's all-in-one (collector and query, in-memory storage) on free loopback ports: the
 * services export OTLP to `otlpEndpoint` (HTTP/protobuf) and a test reads the spans back
 * from the query API. Every port it opens is given explicitly, on 127.0.0.1. `stop()` stops
 * it; if the test process dies first, the watchdog sidecar does.
 */
export class Jaeger {
  /** `http://127.0.0.1:PORT`: OTEL_EXPORTER_OTLP_ENDPOINT of the services (they append /v1/traces). */
  readonly otlpEndpoint: string;
  /** `http://127.0.0.1:PORT`: the query API (and UI). */
  readonly queryUrl: string;
  readonly #process: ManagedProcess;
  readonly #dir: string;
  readonly #watchdog: Watchdog;
  #stopping: Promise<void> | undefined;

  private constructor(ports: JaegerPorts, process: ManagedProcess, dir: string, watchdog: Watchdog) {
    this.otlpEndpoint = `http://${LOOPBACK}:${ports.otlpHttp}`;
    this.queryUrl = `http://${LOOPBACK}:${ports.queryHttp}`;
    this.#process = process;
    this.#dir = dir;
    this.#watchdog = watchdog;
  }

  static async start(options: JaegerOptions = {}): Promise<Jaeger> {
    const binDir = options.binDir ?? (await ensureBinaries());
    for (let attempt = 1; ; attempt++) {
      try {
        return await Jaeger.#startOnce(binDir, options);
      } catch (error) {
        // Free ports are chosen before Jaeger binds them; another process can win that race.
        const portTaken = error instanceof ControlPlaneError && /address already in use/i.test(error.logTail);
        if (!portTaken || attempt >= START_ATTEMPTS) throw error;
      }
    }
  }

  static async #startOnce(binDir: string, options: JaegerOptions): Promise<Jaeger> {
    const dir = await mkdtemp(join(tmpdir(), 'kruntimes-jaeger-'));
    const watchdog = Watchdog.start({ graceMs: 5_000, owner: 'the Jaeger of the test harness' });
    watchdog.watchDirectory(dir);
    let process: ManagedProcess | undefined;
    try {
      const ports = await jaegerPorts();
      process = ManagedProcess.start(
        {
          component: 'jaeger',
          command: join(binDir, 'jaeger-all-in-one'),
          args: jaegerArgs(ports),
          logFile: join(dir, 'jaeger.log'),
          env: jaegerEnv(ports),
        },
        watchdog,
      );
      const jaeger = new Jaeger(ports, process, dir, watchdog);
      await process.untilReady(
        'the Jaeger query API to answer',
        async () => ((await jaeger.#get('/api/services')) === undefined ? undefined : true),
        options.startTimeoutMs ?? 30_000,
      );
      return jaeger;
    } catch (error) {
      await process?.stop();
      await rm(dir, { recursive: true, force: true });
      watchdog.close();
      throw error;
    }
  }

  /** The traces of a service that carry every one of `tags` on some span (Jaeger's tag search); newest first. */
  async traces(service: string, tags: Record<string, string> = {}): Promise<JaegerTrace[]> {
    const query = new URLSearchParams({ service, limit: '20', lookback: '1h', tags: JSON.stringify(tags) });
    const answer = (await this.#get(`/api/traces?${query.toString()}`)) as { data?: JaegerTrace[] | null } | undefined;
    return answer?.data ?? [];
  }

  /** One trace by ID, or undefined while Jaeger does not have it. */
  async trace(traceId: string): Promise<JaegerTrace | undefined> {
    const answer = (await this.#get(`/api/traces/${traceId}`)) as { data?: JaegerTrace[] | null } | undefined;
    return answer?.data?.[0];
  }

  /** The log of the Jaeger process (for a failing test's message). */
  logTail(lines = 40): Promise<string> {
    return this.#process.logTail(lines);
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      try {
        await this.#process.stop();
      } finally {
        await rm(this.#dir, { recursive: true, force: true });
        this.#watchdog.close();
      }
    })();
    return this.#stopping;
  }

  /** The JSON of a GET on the query API; undefined for a 404 or a connection refused. */
  async #get(path: string): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${this.queryUrl}${path}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch {
      return undefined;
    }
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`GET ${path} on Jaeger answered ${response.status}: ${await response.text()}`);
    return response.json();
  }
}

/** Every port the all-in-one listens on; all explicit, so that it never binds a wildcard address. */
interface JaegerPorts {
  otlpGrpc: number;
  otlpHttp: number;
  collectorGrpc: number;
  collectorHttp: number;
  queryGrpc: number;
  queryHttp: number;
  admin: number;
}

/** How to start an all-in-one on free loopback ports (e.g. under another supervisor, as `krt dev up` does). */
export interface JaegerLaunch {
  args: string[];
  env: Record<string, string>;
  /** OTEL_EXPORTER_OTLP_ENDPOINT of the services (HTTP/protobuf). */
  otlpEndpoint: string;
  /** Its port: the one a supervisor may have handed out long before the start. */
  otlpHttpPort: number;
  /** The query API and UI. */
  queryUrl: string;
}

/**
 * Free ports for every listener, but `otlpHttpPort` when given: the services were told that
 * one at their start, so a later start keeps it and chooses the rest then.
 */
export async function jaegerLaunch(otlpHttpPort?: number): Promise<JaegerLaunch> {
  const ports = { ...(await jaegerPorts()), ...(otlpHttpPort === undefined ? {} : { otlpHttp: otlpHttpPort }) };
  return {
    args: jaegerArgs(ports),
    env: jaegerEnv(ports),
    otlpEndpoint: `http://${LOOPBACK}:${ports.otlpHttp}`,
    otlpHttpPort: ports.otlpHttp,
    queryUrl: `http://${LOOPBACK}:${ports.queryHttp}`,
  };
}

/** In-memory storage (its default, said explicitly). Its own spans go to its own OTLP receiver: otherwise to localhost:4317, whatever listens there. */
function jaegerEnv(ports: JaegerPorts): Record<string, string> {
  return { SPAN_STORAGE_TYPE: 'memory', OTEL_EXPORTER_OTLP_ENDPOINT: `http://${LOOPBACK}:${ports.otlpGrpc}` };
}

async function jaegerPorts(): Promise<JaegerPorts> {
  const [otlpGrpc = 0, otlpHttp = 0, collectorGrpc = 0, collectorHttp = 0, queryGrpc = 0, queryHttp = 0, admin = 0] = await freePorts(7);
  return { otlpGrpc, otlpHttp, collectorGrpc, collectorHttp, queryGrpc, queryHttp, admin };
}

function jaegerArgs(ports: JaegerPorts): string[] {
  const at = (port: number): string => `${LOOPBACK}:${port}`;
  return [
    `--collector.otlp.grpc.host-port=${at(ports.otlpGrpc)}`,
    `--collector.otlp.http.host-port=${at(ports.otlpHttp)}`,
    `--collector.grpc-server.host-port=${at(ports.collectorGrpc)}`,
    `--collector.http-server.host-port=${at(ports.collectorHttp)}`,
    `--query.grpc-server.host-port=${at(ports.queryGrpc)}`,
    `--query.http-server.host-port=${at(ports.queryHttp)}`,
    `--admin.http.host-port=${at(ports.admin)}`,
    // Zipkin's receiver stays off (its default: no host-port); the in-memory store is bounded.
    '--memory.max-traces=10000',
  ];
}
