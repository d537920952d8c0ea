import { readFile, readdir } from 'node:fs/promises';
import { Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { ClusterInfo } from './cluster.ts';
import { call } from './https-client.ts';
import { ADMIN_USER } from './users.ts';

/**
 * The nearest-rank percentile: the smallest sample with at least p of all samples at or
 * below it (index ceil(p * n) - 1 of the sorted samples). NaN when there are none.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (!(p > 0 && p <= 1)) throw new RangeError(`percentile ${String(p)} is outside (0, 1]`);
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export function summarizeLatencies(samples: readonly number[]): LatencySummary {
  return {
    count: samples.length,
    p50: percentile(samples, 0.5),
    p99: percentile(samples, 0.99),
    max: samples.length === 0 ? Number.NaN : Math.max(...samples),
  };
}

/**
 * `p50 1.23 ms, p99 4.56 ms, max 7.89 ms`. Under 100 samples the nearest-rank p99 is
 * the maximum itself, so it is printed as the max and not as a p99.
 */
export function formatLatencies(summary: LatencySummary, digits = 2): string {
  const ms = (value: number): string => `${value.toFixed(digits)} ms`;
  if (summary.count < 100) return `p50 ${ms(summary.p50)}, max ${ms(summary.max)} (${summary.count} samples)`;
  return `p50 ${ms(summary.p50)}, p99 ${ms(summary.p99)}, max ${ms(summary.max)}`;
}

/** kube-apiserver's `apiserver_request_total`, summed per `VERB resource[/subresource]`. */
export type ApiServerRequests = ReadonlyMap<string, number>;

const REQUEST_TOTAL = /^apiserver_request_total\{([^}]*)\} (\S+)$/gm;

/** Parses `apiserver_request_total` out of a Prometheus exposition of kube-apiserver. */
export function parseApiServerRequests(exposition: string): ApiServerRequests {
  const totals = new Map<string, number>();
  for (const match of exposition.matchAll(REQUEST_TOTAL)) {
    const labels = new Map<string, string>();
    for (const pair of (match[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels.set(pair[1] ?? '', pair[2] ?? '');
    const subresource = labels.get('subresource') ?? '';
    const key = `${labels.get('verb') ?? ''} ${labels.get('resource') ?? ''}${subresource === '' ? '' : `/${subresource}`}`;
    totals.set(key, (totals.get(key) ?? 0) + Number(match[2]));
  }
  return totals;
}

/** The control plane's request counters now (read as the admin, over its loopback address). */
export async function apiServerRequests(info: ClusterInfo): Promise<ApiServerRequests> {
  const admin = info.users.find((user) => user.name === ADMIN_USER);
  if (admin === undefined) throw new Error('the control plane has no admin user');
  const answer = await call(`${info.server}/metrics`, {
    ca: info.caPem,
    method: 'GET',
    headers: { authorization: `Bearer ${admin.token}` },
  });
  if (answer.status !== 200) throw new Error(`kube-apiserver /metrics answered ${answer.status}`);
  return parseApiServerRequests(answer.body);
}

/**
 * What changed between two readings, largest first, without the reading requests
 * themselves (`GET /metrics` is not counted by apiserver_request_total anyway).
 */
export function apiServerRequestDelta(before: ApiServerRequests, after: ApiServerRequests): { total: number; byKind: [string, number][] } {
  const byKind: [string, number][] = [];
  for (const [key, value] of after) {
    const delta = value - (before.get(key) ?? 0);
    if (delta > 0) byKind.push([key, delta]);
  }
  byKind.sort((a, b) => b[1] - a[1]);
  return { total: byKind.reduce((sum, [, delta]) => sum + delta, 0), byKind };
}

/** `12 (8 PUT leases, 4 GET runs)`, or `0`. */
export function formatApiServerRequestDelta(delta: { total: number; byKind: [string, number][] }): string {
  if (delta.total === 0) return '0';
  return `${delta.total} (${delta.byKind.map(([kind, count]) => `${count} ${kind}`).join(', ')})`;
}

/**
 * One watch of a namespace's Runs for the benchmarks: the newest phase of every Run and,
 * on this process's clock (`performance.now()`), when each (Run, phase) was first seen,
 * so that a latency is read from the watch's delivery and not from a poll.
 */
export class RunPhaseWatch {
  readonly #phase = new Map<string, string>();
  readonly #seenAt = new Map<string, number>();
  readonly #waiters = new Set<() => void>();
  readonly #errors: string[] = [];
  readonly #kubeConfig: KubeConfig;
  readonly #path: string;
  #resourceVersion: string | undefined;
  #abort: (() => void) | undefined;
  #stopped = false;
  #restarts = 0;

  private constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#kubeConfig = kubeConfig;
    this.#path = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${namespace}/${RUN_PLURAL}`;
  }

  static async start(kubeConfig: KubeConfig, namespace: string): Promise<RunPhaseWatch> {
    const watch = new RunPhaseWatch(kubeConfig, namespace);
    await watch.#connect();
    return watch;
  }

  /**
   * Watches from the last resourceVersion seen. The API server ends a watch that falls
   * behind a burst of events (or after its timeout): it is resumed where it stopped, and
   * counted in `restarts`, since the events of the gap are timed at their late delivery.
   */
  async #connect(): Promise<void> {
    const request = await new Watch(this.#kubeConfig).watch(
      this.#path,
      { allowWatchBookmarks: true, ...(this.#resourceVersion === undefined ? {} : { resourceVersion: this.#resourceVersion }) },
      (type: string, run: Run) => {
        this.#observe(type, run);
      },
      (error: unknown) => {
        // stop() aborts the request, which reports an AbortError here: not a failure.
        if (this.#stopped) return;
        if (error !== undefined && error !== null)
          this.#errors.push(`watch: ${error instanceof Error ? error.message : JSON.stringify(error)}`);
        this.#restarts += 1;
        this.#connect().catch((connectError: unknown) => {
          this.#errors.push(`watch restart: ${connectError instanceof Error ? connectError.message : String(connectError)}`);
        });
      },
    );
    this.#abort = () => {
      request.abort();
    };
  }

  /** How often the watch was resumed. */
  get restarts(): number {
    return this.#restarts;
  }

  /** The newest phase seen (`Pending` before any status), undefined when absent or deleted. */
  phase(name: string): string | undefined {
    return this.#phase.get(name);
  }

  has(name: string): boolean {
    return this.#phase.has(name);
  }

  /** When `name` was first seen in `phase`, on `performance.now()`'s clock. */
  seenAt(name: string, phase: string): number | undefined {
    return this.#seenAt.get(`${name}\u0000${phase}`);
  }

  get errors(): readonly string[] {
    return this.#errors;
  }

  /** Resolves once `predicate` holds (checked now and on every event). */
  until(predicate: () => boolean, timeoutMs: number, what = 'the condition'): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!predicate()) return;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(`${what}: timed out after ${String(timeoutMs)} ms${this.#errors.length > 0 ? ` (${this.#errors.join('; ')})` : ''}`),
        );
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }

  /** Resolves once `name` was seen in `phase`. */
  untilSeen(name: string, phase: string, timeoutMs = 60_000): Promise<void> {
    return this.until(() => this.seenAt(name, phase) !== undefined, timeoutMs, `Run ${name} ${phase}`);
  }

  untilGone(name: string, timeoutMs = 60_000): Promise<void> {
    return this.until(() => !this.#phase.has(name), timeoutMs, `Run ${name} gone`);
  }

  stop(): void {
    this.#stopped = true;
    this.#abort?.();
  }

  #observe(type: string, run: Run): void {
    if (type === 'ERROR') {
      // A Status, e.g. 410 Gone: the resourceVersion is too old; watch anew (the API server lists first).
      this.#resourceVersion = undefined;
      this.#errors.push(`watch: ${JSON.stringify(run)}`);
      return;
    }
    this.#resourceVersion = run.metadata.resourceVersion ?? this.#resourceVersion;
    if (type === 'BOOKMARK') return;
    const name = run.metadata.name ?? '';
    if (type === 'DELETED') this.#phase.delete(name);
    else {
      const current = run.status?.phase ?? 'Pending';
      this.#phase.set(name, current);
      const key = `${name}\u0000${current}`;
      if (!this.#seenAt.has(key)) this.#seenAt.set(key, performance.now());
    }
    for (const check of [...this.#waiters]) check();
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export async function processCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${String(pid)}/stat`, 'utf8');
  // Fields after the command (which may hold spaces) start after its closing parenthesis; utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** The kernel's USER_HZ, 100 on every Linux this runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The kube-apiserver process serving `info` (found by its --secure-port), for processCpuSeconds. */
export async function apiServerPid(info: ClusterInfo): Promise<number | undefined> {
  const flag = `--secure-port=${new URL(info.server).port}`;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const argv = args.split('\0');
    if (argv[0]?.endsWith('kube-apiserver') === true && argv.includes(flag)) return Number(entry);
  }
  return undefined;
}
