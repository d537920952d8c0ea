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
