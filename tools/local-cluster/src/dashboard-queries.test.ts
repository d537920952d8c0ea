import { dashboardQueries, formatDashboardReport, instantiate, outcomeOf } from './dashboard-queries.ts';
import type { QueryResult } from './dashboard-queries.ts';

describe('instantiate: the query Grafana sends with "All" selected', () => {
  it.each([
    ['sum(rate(x{namespace=~"$namespace"}[$__rate_interval]))', 'sum(rate(x{namespace=~".*"}[5m]))'],
    ['x{a=~"${runtime}", b=~"$run"}', 'x{a=~".*", b=~".*"}'],
    ['label_values(kruntimes_runtime_capacity_total, namespace)', 'count by (namespace) (kruntimes_runtime_capacity_total)'],
    ['label_values( m{job="a"} , run )', 'count by (run) (m{job="a"})'],
    ['label_values(m{a=~"$namespace", b=~"$runtime"}, run)', 'count by (run) (m{a=~".*", b=~".*"})'],
    ['max(kruntimes_scheduler_pending_runs)', 'max(kruntimes_scheduler_pending_runs)'],
  ])('%s', (expr, sent) => {
    expect(instantiate(expr, '5m')).toBe(sent);
  });
});

describe('outcomeOf: what a panel would show', () => {
  const vector = (...values: string[]) => ({
    status: 'success',
    data: { resultType: 'vector', result: values.map((value) => ({ metric: {}, value: [1, value] })) },
  });
  it.each([
    ['two finite series', 200, vector('1', '0'), { kind: 'data', series: 2 }],
    ['a zero is data', 200, vector('0'), { kind: 'data', series: 1 }],
    ['no series', 200, vector(), { kind: 'empty' }],
    ['only NaN (histogram_quantile of no observations)', 200, vector('NaN', 'NaN'), { kind: 'empty' }],
    ['NaN beside a value', 200, vector('NaN', '0.5'), { kind: 'data', series: 1 }],
    ['+Inf only', 200, vector('+Inf'), { kind: 'empty' }],
    ['a finite scalar', 200, { status: 'success', data: { resultType: 'scalar', result: [1, '3'] } }, { kind: 'data', series: 1 }],
    ['a NaN scalar', 200, { status: 'success', data: { resultType: 'scalar', result: [1, 'NaN'] } }, { kind: 'empty' }],
    [
      'a matrix with one finite point',
      200,
      {
        status: 'success',
        data: {
          resultType: 'matrix',
          result: [
            {
              values: [
                [1, 'NaN'],
                [2, '4'],
              ],
            },
          ],
        },
      },
      { kind: 'data', series: 1 },
    ],
    ['a bad query', 400, { status: 'error', error: 'parse error' }, { kind: 'error', message: 'HTTP 400: parse error' }],
    ['an error without text', 503, { status: 'error' }, { kind: 'error', message: 'HTTP 503: no error text' }],
    ['not JSON', 502, null, { kind: 'error', message: 'HTTP 502: not a Prometheus answer' }],
    [
      'a string result',
      200,
      { status: 'success', data: { resultType: 'string', result: [1, 'x'] } },
      { kind: 'error', message: 'unexpected result type string' },
    ],
  ])('%s', (_name, status, body, outcome) => {
    expect(outcomeOf(status, body)).toEqual(outcome);
  });
});

test('dashboardQueries: variables first, then every target of every panel, rows flattened', () => {
  expect(
    dashboardQueries({
      title: 'D',
      templating: {
        list: [
          { name: 'datasource', type: 'datasource' },
          { name: 'namespace', type: 'query', definition: 'label_values(m, namespace)' },
        ],
      },
      panels: [
        { title: 'row', panels: [{ title: 'A', targets: [{ expr: 'a' }, { expr: 'b' }] }] },
        { title: 'B', targets: [{ expr: 'c' }, {}] },
      ],
    }),
  ).toEqual([
    { dashboard: 'D', panel: 'variable namespace', expr: 'label_values(m, namespace)' },
    { dashboard: 'D', panel: 'A', expr: 'a' },
    { dashboard: 'D', panel: 'A', expr: 'b' },
    { dashboard: 'D', panel: 'B', expr: 'c' },
  ]);
});

test('formatDashboardReport: every query with its series; unexpected empties and errors fail; expected empties say why', () => {
  const result = (panel: string, outcome: QueryResult['outcome']): QueryResult => ({
    dashboard: 'D',
    panel,
    expr: 'e',
    sent: 's',
    outcome,
  });
  const report = formatDashboardReport(
    [
      result('ok', { kind: 'data', series: 3 }),
      result('quiet', { kind: 'empty' }),
      result('broken', { kind: 'empty' }),
      result('bad', { kind: 'error', message: 'parse error' }),
      result('quiet-but-filled', { kind: 'data', series: 1 }),
    ],
    new Map([
      ['quiet', 'nothing recovered'],
      ['quiet-but-filled', 'maybe'],
    ]),
  );
  expect(report).toEqual({
    failures: 2,
    lines: [
      'dashboards: 5 queries evaluated through Prometheus: 2 with data, 1 empty as expected, 2 failed',
      '    3 series  D / ok: s',
      '  empty       D / quiet (expected: nothing recovered)',
      '  EMPTY       D / broken: s',
      '  ERROR       D / bad: parse error in s',
      '    1 series  D / quiet-but-filled: s',
    ],
  });
});
