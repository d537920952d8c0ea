/** The labels of one function Run's series. `run` is the Run's name. */
export interface FunctionLabels {
  namespace: string;
  runtime: string;
  run: string;
}

/** A function Run this runtimed holds now (its registration), with when it became Ready if known. */
export interface HeldFunction extends FunctionLabels {
  readySinceMs: number | undefined;
}

/** The hooks the dataplane and runtimed call; `FunctionMetrics` implements them. */
export interface FunctionInvocationHooks {
  /** An invocation this runtimed serves as the owner begins; call the result once when it ends ('OK' or the error code). */
  invocationStarted(labels: FunctionLabels): (code: string) => void;
  /** Called at scrape time for the function Runs held now: only their series are exported. */
  observeHeld(held: () => readonly HeldFunction[]): void;
}

export const NO_FUNCTION_METRICS: FunctionInvocationHooks = {
  invocationStarted: () => () => undefined,
  observeHeld: () => undefined,
};

export const INVOCATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900] as const;

interface RunSeries {
  labels: FunctionLabels;
  codes: Map<string, number>;
  buckets: number[];
  count: number;
  sum: number;
  inflight: number;
  /** When the last invocation ended (ms since the epoch); undefined before the first one. */
  lastEndedMs: number | undefined;
  /** When this process first saw the Run, the idle clock's start when its Ready time is unknown. */
  firstSeenMs: number;
}

/**
 * Per-function invocation metrics of the owner runtimed, in the Prometheus text format:
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `kruntimes_function_invocations_total` | counter | `namespace`, `runtime`, `run`, `code` (OK or the kruntimes error code) |
 * | `kruntimes_function_invocation_duration_seconds` | histogram | `namespace`, `runtime`, `run` |
 * | `kruntimes_function_inflight` | gauge | `namespace`, `runtime`, `run` |
 * | `kruntimes_function_idle_seconds` | gauge | `namespace`, `runtime`, `run`: since the last invocation ended, or since Ready; 0 while one is in flight |
 *
 * Not OpenTelemetry instruments: those keep every attribute set for the life of the
 * process, and the `run` label must stay bounded. At each scrape the series of a Run this
 * runtimed no longer holds (and that has nothing in flight) are dropped; a counter that
 * comes back for the same name starts from 0, which Prometheus reads as a reset.
 */
export class FunctionMetrics implements FunctionInvocationHooks {
  readonly #now: () => number;
  readonly #clock: () => number;
  readonly #runs = new Map<string, RunSeries>();
  #held: (() => readonly HeldFunction[]) | undefined;

  /** `now`: wall clock in ms (idle time); `clock`: monotonic ms (durations). */
  constructor(options: { now?: () => number; clock?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#clock = options.clock ?? (() => performance.now());
  }

  invocationStarted(labels: FunctionLabels): (code: string) => void {
    const series = this.#series(labels);
    series.inflight += 1;
    const started = this.#clock();
    let ended = false;
    return (code) => {
      if (ended) return;
      ended = true;
      const seconds = Math.max(0, (this.#clock() - started) / 1000);
      series.inflight -= 1;
      series.codes.set(code, (series.codes.get(code) ?? 0) + 1);
      series.count += 1;
      series.sum += seconds;
      INVOCATION_BUCKETS_SECONDS.forEach((bound, i) => {
        if (seconds <= bound) series.buckets[i] = (series.buckets[i] ?? 0) + 1;
      });
      // A scrape never drops a Run with something in flight, so this series is still the map's.
      series.lastEndedMs = this.#now();
    };
  }

  observeHeld(held: () => readonly HeldFunction[]): void {
    this.#held = held;
  }

  /** The exposition; drops the series of Runs no longer held first. */
  render(): string {
    const now = this.#now();
    const held = new Map((this.#held?.() ?? []).map((h) => [key(h), h]));
    for (const [k, series] of this.#runs) if (!held.has(k) && series.inflight === 0) this.#runs.delete(k);
    for (const h of held.values()) this.#series(h);
    const runs = [...this.#runs.values()].sort((a, b) => key(a.labels).localeCompare(key(b.labels)));

    const name = {
      invocations: 'kruntimes_function_invocations_total',
      duration: 'kruntimes_function_invocation_duration_seconds',
      inflight: 'kruntimes_function_inflight',
      idle: 'kruntimes_function_idle_seconds',
    };
    const lines = [
      `# HELP ${name.invocations} Invocations served by this runtimed as the owner, by code (OK or the kruntimes error code).`,
      `# TYPE ${name.invocations} counter`,
    ];
    for (const s of runs)
      for (const [code, n] of [...s.codes].sort(([a], [b]) => a.localeCompare(b)))
        lines.push(`${name.invocations}{${labels({ ...s.labels, code })}} ${n}`);
    lines.push(
      `# HELP ${name.duration} Duration of invocations served by this runtimed as the owner.`,
      `# TYPE ${name.duration} histogram`,
    );
    for (const s of runs) {
      if (s.count === 0) continue;
      INVOCATION_BUCKETS_SECONDS.forEach((bound, i) =>
        lines.push(`${name.duration}_bucket{${labels({ ...s.labels, le: String(bound) })}} ${s.buckets[i] ?? 0}`),
      );
      lines.push(
        `${name.duration}_bucket{${labels({ ...s.labels, le: '+Inf' })}} ${s.count}`,
        `${name.duration}_sum{${labels(s.labels)}} ${s.sum}`,
        `${name.duration}_count{${labels(s.labels)}} ${s.count}`,
      );
    }
    lines.push(`# HELP ${name.inflight} Invocations of a function Run in flight on this runtimed.`, `# TYPE ${name.inflight} gauge`);
    for (const s of runs) lines.push(`${name.inflight}{${labels(s.labels)}} ${s.inflight}`);
    lines.push(
      `# HELP ${name.idle} Seconds since the last invocation of a function Run ended (or since it became Ready); 0 while one is in flight.`,
      `# TYPE ${name.idle} gauge`,
    );
    for (const s of runs) {
      const since = Math.max(s.lastEndedMs ?? 0, held.get(key(s.labels))?.readySinceMs ?? s.firstSeenMs);
      lines.push(`${name.idle}{${labels(s.labels)}} ${s.inflight > 0 ? 0 : Math.max(0, (now - since) / 1000)}`);
    }
    return `${lines.join('\n')}\n`;
  }

  #series(labels: FunctionLabels): RunSeries {
    const k = key(labels);
    let series = this.#runs.get(k);
    if (series === undefined) {
      series = {
        labels: { namespace: labels.namespace, runtime: labels.runtime, run: labels.run },
        codes: new Map(),
        buckets: INVOCATION_BUCKETS_SECONDS.map(() => 0),
        count: 0,
        sum: 0,
        inflight: 0,
        lastEndedMs: undefined,
        firstSeenMs: this.#now(),
      };
      this.#runs.set(k, series);
    }
    return series;
  }
}

function key(labels: FunctionLabels): string {
  return `${labels.namespace}/${labels.runtime}/${labels.run}`;
}

function labels(values: FunctionLabels & { code?: string; le?: string }): string {
  return Object.entries(values)
    .map(([n, v]: [string, string]) => `${n}="${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`)
    .join(',');
}
