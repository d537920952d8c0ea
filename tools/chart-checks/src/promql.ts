import { parser } from '@prometheus-io/lezer-promql';

/**
 * Grafana's variables are not PromQL: `$__rate_interval` and friends stand where a duration
 * goes, `$var` only inside label matcher strings here. Replaced by what Grafana substitutes
 * at query time, so that the parser sees the query Prometheus will get.
 */
export function substituteGrafanaVariables(expr: string): string {
  return expr.replaceAll(/\$__(rate_interval|interval|range)/g, '5m');
}

export interface ParsedPromQL {
  /** Positions and text around each syntax error; empty when it parses. */
  errors: string[];
  /** Metric names of the vector selectors (`name{...}`), in order of appearance. */
  metricNames: string[];
}

/** Parses with the Prometheus project's own PromQL grammar (@prometheus-io/lezer-promql). */
export function parsePromQL(grafanaExpr: string): ParsedPromQL {
  const expr = substituteGrafanaVariables(grafanaExpr);
  const tree = parser.parse(expr);
  const errors: string[] = [];
  const metricNames: string[] = [];
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(`syntax error at ${node.from}: …${expr.slice(Math.max(0, node.from - 20), node.from + 20)}…`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') metricNames.push(expr.slice(node.from, node.to));
    },
  });
  return { errors, metricNames };
}

/** The metric family a series name belongs to (histogram series carry _bucket, _sum, _count). */
export function metricFamily(name: string, families: ReadonlySet<string>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix) && families.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return name;
}
