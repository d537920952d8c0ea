import { PerformanceObserver, constants, monitorEventLoopDelay } from 'node:perf_hooks';
import { sampleLines } from './prometheus-text.ts';

/** What every service reports of its own process. */
export interface ProcessSample {
  /** V8's heap in use (live objects and garbage not yet collected). */
  heapUsedBytes: number;
  /** V8's heap in use just after the last full (mark-compact) collection: what is live; heapUsedBytes before the first. */
  heapLiveBytes: number;
  /** Resident set size: what the memory limit of the container counts. */
  residentBytes: number;
  /** p99 of the event-loop delay over the last one to two windows (0 before any sample). */
  eventLoopDelayP99Seconds: number;
}

/**
 * The families, one definition for both exporters: the Prometheus text below (the
 * controllers) and the OpenTelemetry observable gauges of runtimed and the gateway.
 */
export const PROCESS_GAUGES: readonly { name: string; help: string; value: (sample: ProcessSample) => number }[] = [
  {
    name: 'kruntimes_process_heap_used_bytes',
    help: 'V8 heap in use by this process.',
    value: (sample) => sample.heapUsedBytes,
  },
  {
    name: 'kruntimes_process_heap_live_bytes',
    help: 'V8 heap in use just after the last full garbage collection: the live data, what a memory limit must hold.',
    value: (sample) => sample.heapLiveBytes,
  },
  {
    name: 'kruntimes_process_resident_bytes',
    help: 'Resident memory of this process.',
    value: (sample) => sample.residentBytes,
  },
  {
    name: 'kruntimes_process_event_loop_delay_p99_seconds',
    help: 'p99 of the event-loop delay over about the last minute (a blocked loop delays timers, I/O and Lease renewals).',
    value: (sample) => sample.eventLoopDelayP99Seconds,
  },
];

export function renderProcessMetrics(sample: ProcessSample): string {
  return `${PROCESS_GAUGES.flatMap((gauge) => sampleLines(gauge.name, gauge.help, 'gauge', gauge.value(sample))).join('\n')}\n`;
}

/** The part of perf_hooks' IntervalHistogram read here (nanoseconds). */
export interface DelayHistogram {
  readonly count: number;
  percentile(percentile: number): number;
  reset(): void;
}

export interface ProcessMetricsOptions {
  /** How long one event-loop window lasts. Default 30 s. */
  windowMs?: number;
  now?: () => number;
  /** In place of perf_hooks' monitor (tests). */
  delay?: DelayHistogram;
  memory?: () => { heapUsed: number; rss: number };
  /** The heap in use after the last full collection, undefined before one (tests); default: observed (LiveHeap). */
  liveHeap?: () => number | undefined;
}

/**
 * This process's memory and event-loop delay. The delay histogram is cut into windows
 * (rotated when sampled) so that the p99 tells about the last minute, not the whole life
 * of the process; the p99 reported is the larger of the window just closed and the one
 * in progress, so a scrape right after a rotation still sees a recent stall.
 */
export class ProcessMetrics {
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #delay: DelayHistogram;
  readonly #memory: () => { heapUsed: number; rss: number };
  readonly #liveHeap: () => number | undefined;
  #windowStartMs: number;
  #closedP99Ns = 0;

  constructor(options: ProcessMetricsOptions = {}) {
    this.#windowMs = options.windowMs ?? 30_000;
    this.#now = options.now ?? (() => performance.now());
    this.#memory = options.memory ?? (() => process.memoryUsage());
    this.#liveHeap = options.liveHeap ?? observeLiveHeap();
    if (options.delay === undefined) {
      // A native timer that does not keep the process alive; 10 ms resolution is enough to see stalls.
      const monitor = monitorEventLoopDelay({ resolution: 10 });
      monitor.enable();
      this.#delay = monitor;
    } else this.#delay = options.delay;
    this.#windowStartMs = this.#now();
  }

  sample(): ProcessSample {
    const nowMs = this.#now();
    const currentP99Ns = this.#delay.count > 0 ? this.#delay.percentile(99) : 0;
    const p99Ns = Math.max(this.#closedP99Ns, currentP99Ns);
    if (nowMs - this.#windowStartMs >= this.#windowMs) {
      this.#closedP99Ns = currentP99Ns;
      this.#delay.reset();
      this.#windowStartMs = nowMs;
    }
    const { heapUsed, rss } = this.#memory();
    return {
      heapUsedBytes: heapUsed,
      heapLiveBytes: this.#liveHeap() ?? heapUsed,
      residentBytes: rss,
      eventLoopDelayP99Seconds: p99Ns / 1e9,
    };
  }

  render(): string {
    return renderProcessMetrics(this.sample());
  }
}

/** The one observer of this process's full collections, shared by every ProcessMetrics. */
let liveHeapBytes: number | undefined;
let observingLiveHeap = false;

/**
 * The heap in use as read when a full (mark-compact) collection was reported: close to what
 * is live, unlike heapUsed, which also counts garbage V8 has not collected yet (it lets the
 * heap grow far beyond the live data when nothing caps it). Read in the observer's callback,
 * shortly after the collection.
 */
function observeLiveHeap(): () => number | undefined {
  if (!observingLiveHeap) {
    observingLiveHeap = true;
    new PerformanceObserver((list) => {
      const full = list
        .getEntries()
        .some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
      if (full) liveHeapBytes = process.memoryUsage().heapUsed;
    }).observe({ entryTypes: ['gc'] });
  }
  return () => liveHeapBytes;
}

/** The part of an OpenTelemetry Meter used below (runtimed's and the gateway's). */
export interface GaugeMeter<G> {
  createObservableGauge(name: string, options: { description: string; unit?: string }): G;
  addBatchObservableCallback(callback: (result: { observe(observable: G, value: number): void }) => void, observables: G[]): void;
}

/**
 * PROCESS_GAUGES as observable gauges of an OpenTelemetry meter: the same names on the
 * services whose /metrics the OpenTelemetry Prometheus exporter renders (it keeps `_`
 * and appends no unit suffix). One batch callback: each collection takes one sample, so
 * every gauge reports the same instant and the process is read once, not once per gauge.
 */
export function observeProcessGauges<G>(meter: GaugeMeter<G>, metrics: ProcessMetrics = new ProcessMetrics()): void {
  const gauges = PROCESS_GAUGES.map((gauge) => ({
    gauge,
    observable: meter.createObservableGauge(gauge.name, { description: gauge.help }),
  }));
  meter.addBatchObservableCallback(
    (result) => {
      const sample = metrics.sample();
      for (const { gauge, observable } of gauges) result.observe(observable, gauge.value(sample));
    },
    gauges.map(({ observable }) => observable),
  );
}
