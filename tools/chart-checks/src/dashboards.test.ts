import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARDS, DASHBOARD_DIR, expressions, renderDashboard, variableSelector } from './dashboards.ts';
import { readExportedMetrics } from './exported-metrics.ts';
import { metricFamily, parsePromQL } from './promql.ts';
import { WORKSPACE_ROOT } from './workspace.ts';

const families = new Set(readExportedMetrics(WORKSPACE_ROOT).map((metric) => metric.name));

function grafanaExpressions(file: string): { where: string; expr: string }[] {
  const json = JSON.parse(readFileSync(join(WORKSPACE_ROOT, DASHBOARD_DIR, file), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
    templating: { list: { name: string; type: string; definition?: string }[] };
  };
  return [
    ...json.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `${file} / ${panel.title}`, expr: target.expr }))),
    ...json.templating.list
      .filter((v) => v.type === 'query')
      .map((v) => ({ where: `${file} / $${v.name}`, expr: variableSelector(v.definition ?? '') })),
  ];
}

describe.each(DASHBOARDS.map((dashboard) => [dashboard.file, dashboard] as const))('dashboard %s', (file, dashboard) => {
  it('is fresh (run `npx nx run chart-checks:generate`)', () => {
    expect(readFileSync(join(WORKSPACE_ROOT, DASHBOARD_DIR, file), 'utf8')).toBe(renderDashboard(dashboard));
  });

  it('has panels, each with at least one query', () => {
    expect(expressions(dashboard).length).toBeGreaterThan(0);
    for (const row of dashboard.rows) for (const panel of row.panels) expect(panel.targets.length).toBeGreaterThan(0);
  });

  it('has the namespace and Runtime variables', () => {
    expect(dashboard.variables.map((variable) => variable.name)).toEqual(expect.arrayContaining(['namespace', 'runtime']));
  });

  it.each(grafanaExpressions(file).map(({ where, expr }) => [where, expr]))(
    '%s parses as PromQL and uses only exported metrics',
    (_where, expr) => {
      const parsed = parsePromQL(expr);
      expect(parsed.errors).toEqual([]);
      expect(parsed.metricNames.length).toBeGreaterThan(0);
      expect(parsed.metricNames.map((name) => metricFamily(name, families)).filter((family) => !families.has(family))).toEqual([]);
    },
  );
});

describe('the PromQL checks themselves', () => {
  it('find a syntax error', () => {
    expect(parsePromQL('sum(rate(kruntimes_gateway_requests_total[5m])').errors).not.toEqual([]);
    expect(parsePromQL('sum by (code) rate(x[5m]))').errors).not.toEqual([]);
  });

  it('see Grafana interval variables as durations', () => {
    expect(parsePromQL('rate(kruntimes_gateway_requests_total[$__rate_interval])').errors).toEqual([]);
  });

  it('find the metric names, histogram series included', () => {
    const parsed = parsePromQL(
      'histogram_quantile(0.9, sum by (le) (rate(kruntimes_gateway_overhead_seconds_bucket[5m]))) / on() group_left sum(kruntimes_nope)',
    );
    expect(parsed.metricNames).toEqual(['kruntimes_gateway_overhead_seconds_bucket', 'kruntimes_nope']);
    expect(parsed.metricNames.map((name) => metricFamily(name, families))).toEqual([
      'kruntimes_gateway_overhead_seconds',
      'kruntimes_nope',
    ]);
  });
});
