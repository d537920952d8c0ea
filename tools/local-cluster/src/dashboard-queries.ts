// Every query of the chart's Grafana dashboards, evaluated through a real Prometheus's HTTP
// API, as Grafana would send it with "All" selected: so a panel that stays empty or errs on
// real series (a label nobody sets, a rate over a gauge, a histogram without buckets) shows.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** One query a dashboard sends: a panel target, or a variable's label_values() lookup. */
export interface DashboardQuery {
  dashboard: string;
  /** The panel's title, or `variable <name>`. */
  panel: string;
  /** As written in the dashboard. */
  expr: string;
}

export type QueryOutcome =
  | { kind: 'data'; series: number }
  /** No series, or only NaN / infinite values: Grafana draws nothing. */
  | { kind: 'empty' }
  | { kind: 'error'; message: string };

export interface QueryResult extends DashboardQuery {
  /** What was sent, variables replaced. */
  sent: string;
  outcome: QueryOutcome;
}

interface GrafanaTarget {
  expr?: unknown;
}
interface GrafanaPanel {
  title?: unknown;
  targets?: GrafanaTarget[];
  panels?: GrafanaPanel[];
}
interface GrafanaDashboard {
  title?: unknown;
  panels?: GrafanaPanel[];
  templating?: { list?: { name?: unknown; type?: unknown; definition?: unknown }[] };
}

/** The queries of one dashboard (rows flattened), in the order Grafana shows them. */
export function dashboardQueries(dashboard: GrafanaDashboard): DashboardQuery[] {
  const title = typeof dashboard.title === 'string' ? dashboard.title : '(untitled)';
  const queries: DashboardQuery[] = [];
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type !== 'query' || typeof variable.definition !== 'string') continue;
    queries.push({ dashboard: title, panel: `variable ${String(variable.name)}`, expr: variable.definition });
  }
  const visit = (panels: readonly GrafanaPanel[]): void => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (typeof target.expr !== 'string') continue;
        queries.push({ dashboard: title, panel: typeof panel.title === 'string' ? panel.title : '(untitled)', expr: target.expr });
      }
      visit(panel.panels ?? []);
    }
  };
  visit(dashboard.panels ?? []);
  return queries;
}

/** Every query of every dashboard JSON file in `dir`. */
export async function dashboardQueriesIn(dir: string): Promise<DashboardQuery[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.json')).sort();
  const queries: DashboardQuery[] = [];
  for (const file of files) queries.push(...dashboardQueries(JSON.parse(await readFile(join(dir, file), 'utf8')) as GrafanaDashboard));
  return queries;
}

/**
 * The PromQL Grafana sends: every `$variable` as its "All" value `.*`, `$__rate_interval`
 * as `rateInterval`, and `label_values(metric, label)` (a variable's lookup, which Grafana
 * answers from the series API) as the equivalent query `count by (label) (metric)`.
 */
export function instantiate(expr: string, rateInterval: string): string {
  // The label is after the last comma: the selector before it may hold commas of its own.
  const labelValues = /^label_values\(\s*(.+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$/.exec(expr.trim());
  const query = labelValues === null ? expr : `count by (${labelValues[2] ?? ''}) (${labelValues[1] ?? ''})`;
  return query.replaceAll('$__rate_interval', rateInterval).replace(/\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/g, '.*');
}

/** The answer of GET /api/v1/query, read as what a panel would show. */
export function outcomeOf(httpStatus: number, body: unknown): QueryOutcome {
  const answer = body as { status?: unknown; error?: unknown; data?: { resultType?: unknown; result?: unknown } } | null;
  if (answer === null || typeof answer !== 'object')
    return { kind: 'error', message: `HTTP ${String(httpStatus)}: not a Prometheus answer` };
  if (answer.status !== 'success') {
    return { kind: 'error', message: `HTTP ${String(httpStatus)}: ${typeof answer.error === 'string' ? answer.error : 'no error text'}` };
  }
  const { resultType, result } = answer.data ?? {};
  if (resultType === 'scalar') return finite((result as unknown[] | undefined)?.[1]) ? { kind: 'data', series: 1 } : { kind: 'empty' };
  if (resultType !== 'vector' && resultType !== 'matrix') return { kind: 'error', message: `unexpected result type ${String(resultType)}` };
  const series = (Array.isArray(result) ? result : []) as { value?: unknown[]; values?: unknown[][] }[];
  const filled = series.filter((s) => finite(s.value?.[1]) || (s.values ?? []).some((v) => finite(v[1]))).length;
  return filled === 0 ? { kind: 'empty' } : { kind: 'data', series: filled };
}

/** Prometheus encodes sample values as strings: "NaN", "+Inf", "0.25". */
function finite(value: unknown): boolean {
  return typeof value === 'string' && Number.isFinite(Number(value));
}

/** Each query evaluated at this instant through `prometheusUrl`'s HTTP API; bounded by `timeoutMs` per query. */
export async function evaluateQueries(
  prometheusUrl: string,
  queries: readonly DashboardQuery[],
  options: { rateInterval: string; timeoutMs?: number },
): Promise<QueryResult[]> {
  const results: QueryResult[] = [];
  for (const query of queries) {
    const sent = instantiate(query.expr, options.rateInterval);
    let outcome: QueryOutcome;
    try {
      const response = await fetch(`${prometheusUrl}/api/v1/query`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query: sent }),
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
      const text = await response.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      outcome = outcomeOf(response.status, body);
    } catch (error) {
      outcome = { kind: 'error', message: error instanceof Error ? error.message : String(error) };
    }
    results.push({ ...query, sent, outcome });
  }
  return results;
}

/** Panels that traffic of a kind that did not happen cannot fill, each with the reason. */
export type ExpectedEmpty = ReadonlyMap<string, string>;

export interface DashboardReport {
  lines: string[];
  /** Errors plus empty results that were not expected. */
  failures: number;
}

/** One summary line, then a line per query: how many series it returned, or why it returned none. */
export function formatDashboardReport(results: readonly QueryResult[], expectedEmpty: ExpectedEmpty): DashboardReport {
  const lines: string[] = [];
  let data = 0;
  let expected = 0;
  let failures = 0;
  for (const result of results) {
    const where = `${result.dashboard} / ${result.panel}`;
    switch (result.outcome.kind) {
      case 'data':
        data += 1;
        lines.push(`  ${String(result.outcome.series).padStart(3)} series  ${where}: ${result.sent}`);
        break;
      case 'empty': {
        const reason = expectedEmpty.get(result.panel);
        if (reason === undefined) {
          failures += 1;
          lines.push(`  EMPTY       ${where}: ${result.sent}`);
        } else {
          expected += 1;
          lines.push(`  empty       ${where} (expected: ${reason})`);
        }
        break;
      }
      case 'error':
        failures += 1;
        lines.push(`  ERROR       ${where}: ${result.outcome.message} in ${result.sent}`);
        break;
    }
  }
  const summary = `dashboards: ${String(results.length)} queries evaluated through Prometheus: ${String(data)} with data, ${String(expected)} empty as expected, ${String(failures)} failed`;
  return { lines: [summary, ...lines], failures };
}
