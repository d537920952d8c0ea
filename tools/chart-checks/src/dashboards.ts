/**
 * The Grafana dashboards of the chart, as data: `npx nx run chart-checks:generate` renders
 * them into deploy/charts/kruntimes/dashboards/*.json (shipped as ConfigMaps labelled
 * grafana_dashboard), and the tests parse every PromQL expression and check every metric
 * name against the metrics the services export. Only exported metrics are used.
 */
export const DASHBOARD_DIR = 'deploy/charts/kruntimes/dashboards';

export interface Target {
  expr: string;
  legend: string;
}

export interface Panel {
  title: string;
  description: string;
  unit: string;
  targets: Target[];
  /** Grafana panel type. */
  type?: 'timeseries' | 'stat';
}

export interface Row {
  title: string;
  panels: Panel[];
}

export interface Variable {
  name: string;
  label: string;
  /** A label_values() query; the variable is multi-valued with an "All" option. */
  query: string;
}

export interface Dashboard {
  uid: string;
  file: string;
  title: string;
  description: string;
  variables: Variable[];
  rows: Row[];
}

const RUNTIMED = 'namespace=~"$namespace", runtime=~"$runtime"';
const RATE = '$__rate_interval';

function quantiles(metric: string, selector: string, by = ''): Target[] {
  const group = by === '' ? 'le' : `le, ${by}`;
  const suffix = by === '' ? '' : ` {{${by}}}`;
  return [0.5, 0.99].map((q) => ({
    expr: `histogram_quantile(${q}, sum by (${group}) (rate(${metric}_bucket{${selector}}[${RATE}])))`,
    legend: `p${q * 100}${suffix}`,
  }));
}

// Every Runtime the controller-manager knows has capacity series, Pods or not.
const namespaceVariable: Variable = {
  name: 'namespace',
  label: 'Namespace',
  query: 'label_values(kruntimes_runtime_capacity_total, namespace)',
};
const runtimeVariable: Variable = {
  name: 'runtime',
  label: 'Runtime',
  query: 'label_values(kruntimes_runtime_capacity_total{namespace=~"$namespace"}, runtime)',
};
// Function Runs held by some runtimed now (their series go when no runtimed holds them).
const functionNamespaceVariable: Variable = {
  name: 'namespace',
  label: 'Namespace',
  query: 'label_values(kruntimes_function_inflight, namespace)',
};
const functionRuntimeVariable: Variable = {
  name: 'runtime',
  label: 'Runtime',
  query: 'label_values(kruntimes_function_inflight{namespace=~"$namespace"}, runtime)',
};
const runVariable: Variable = {
  name: 'run',
  label: 'Run',
  query: 'label_values(kruntimes_function_inflight{namespace=~"$namespace", runtime=~"$runtime"}, run)',
};
const FN = 'namespace=~"$namespace", runtime=~"$runtime", run=~"$run"';

export const DASHBOARDS: readonly Dashboard[] = [
  {
    uid: 'kruntimes-platform',
    file: 'platform.json',
    title: 'kruntimes / Platform',
    description:
      'Runs and capacity, scheduling, recovery, invocations through the gateway, authorization and status writes of the whole platform.',
    variables: [namespaceVariable, runtimeVariable],
    rows: [
      {
        title: 'Runs and capacity',
        panels: [
          {
            title: 'Runs by phase',
            description: "Runs of the selected Runtimes by phase (the controller-manager leader's cache).",
            unit: 'short',
            targets: [{ expr: `sum by (phase) (kruntimes_runs{${RUNTIMED}})`, legend: '{{phase}}' }],
          },
          {
            title: 'Pending Runs per Runtime',
            description: 'Runs waiting to be bound to a Runtime Pod.',
            unit: 'short',
            targets: [
              { expr: `sum by (namespace, runtime) (kruntimes_runs{${RUNTIMED}, phase="pending"})`, legend: '{{namespace}}/{{runtime}}' },
            ],
          },
          {
            title: 'Capacity used / total per Runtime',
            description:
              'Runs holding a unit of capacity, and the capacity of ready, non-deleting Pods (used may exceed total during a roll or a Pod loss).',
            unit: 'short',
            targets: [
              {
                expr: `sum by (namespace, runtime) (kruntimes_runtime_capacity_used{${RUNTIMED}})`,
                legend: '{{namespace}}/{{runtime}} used',
              },
              {
                expr: `sum by (namespace, runtime) (kruntimes_runtime_capacity_total{${RUNTIMED}})`,
                legend: '{{namespace}}/{{runtime}} total',
              },
            ],
          },
          {
            title: 'Ready Pods per Runtime',
            description: 'Ready, non-deleting Runtime Pods.',
            unit: 'short',
            targets: [
              { expr: `sum by (namespace, runtime) (kruntimes_runtime_ready_pods{${RUNTIMED}})`, legend: '{{namespace}}/{{runtime}}' },
            ],
          },
        ],
      },
      {
        title: 'Elastic pools',
        panels: [
          {
            title: 'Pods: current, desired, maximum',
            description:
              "Non-deleting Pods of each Runtime, its spec.replicas (the autoscaler's decision with spec.scaling) and its maximum (spec.scaling.maxReplicas; spec.replicas for a fixed pool).",
            unit: 'short',
            targets: [
              { expr: `sum by (namespace, runtime) (kruntimes_runtime_pods{${RUNTIMED}})`, legend: '{{namespace}}/{{runtime}} current' },
              {
                expr: `sum by (namespace, runtime) (kruntimes_runtime_desired_pods{${RUNTIMED}})`,
                legend: '{{namespace}}/{{runtime}} desired',
              },
              { expr: `sum by (namespace, runtime) (kruntimes_runtime_max_pods{${RUNTIMED}})`, legend: '{{namespace}}/{{runtime}} max' },
            ],
          },
          {
            title: 'Runs waiting for a slot',
            description: 'Pending Runs of each Runtime: the demand not yet bound, which the autoscaler scales up for.',
            unit: 'short',
            targets: [
              { expr: `sum by (namespace, runtime) (kruntimes_runtime_pending_runs{${RUNTIMED}})`, legend: '{{namespace}}/{{runtime}}' },
            ],
          },
          {
            title: 'Free slots per Runtime',
            description: 'Capacity of the ready Pods not held by a Run (spec.scaling.spareRuns keeps some free).',
            unit: 'short',
            targets: [
              {
                expr: `sum by (namespace, runtime) (kruntimes_runtime_capacity_total{${RUNTIMED}}) - sum by (namespace, runtime) (kruntimes_runtime_capacity_used{${RUNTIMED}})`,
                legend: '{{namespace}}/{{runtime}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Scheduling',
        panels: [
          {
            title: 'Unbindable pending Runs',
            description: 'Pending Runs the scheduler could not bind in its last pass (leader only).',
            unit: 'short',
            targets: [{ expr: 'max(kruntimes_scheduler_pending_runs)', legend: 'pending' }],
          },
          {
            title: 'Scheduling latency',
            description: "Time from a Run's creation to its bind.",
            unit: 's',
            targets: quantiles('kruntimes_scheduler_bind_latency_seconds', ''),
          },
          {
            title: 'Binds and bind conflicts',
            description: 'Runs bound per second, and bind writes refused with 409.',
            unit: 'ops',
            targets: [
              { expr: `sum(rate(kruntimes_scheduler_binds_total[${RATE}]))`, legend: 'binds' },
              { expr: `sum(rate(kruntimes_scheduler_bind_conflicts_total[${RATE}]))`, legend: 'conflicts' },
            ],
          },
        ],
      },
      {
        title: 'Recovery',
        panels: [
          {
            title: 'Recoveries by cause',
            description: 'Recovery steps stale-recovery took, by what caused them.',
            unit: 'ops',
            targets: [{ expr: `sum by (cause) (rate(kruntimes_recoveries_total[${RATE}]))`, legend: '{{cause}}' }],
          },
          {
            title: 'Recoveries by outcome',
            description: 'What stale-recovery wrote.',
            unit: 'ops',
            targets: [{ expr: `sum by (outcome) (rate(kruntimes_recoveries_total[${RATE}]))`, legend: '{{outcome}}' }],
          },
          {
            title: 'Fence wait',
            description: 'From the first suspicion of an owner to the proof of its fence.',
            unit: 's',
            targets: quantiles('kruntimes_recovery_fence_wait_seconds', ''),
          },
        ],
      },
      {
        title: 'Schedules',
        panels: [
          {
            title: 'Scheduled times: created, skipped, missed',
            description:
              'Per RunSchedule namespace: Runs created for a scheduled time, times skipped behind an active Run, times missed (controller down, suspended, past the starting deadline).',
            unit: 'short',
            targets: [
              {
                expr: `sum by (namespace) (increase(kruntimes_schedule_runs_created_total{namespace=~"$namespace"}[${RATE}]))`,
                legend: '{{namespace}} created',
              },
              {
                expr: `sum by (namespace) (increase(kruntimes_schedule_skipped_total{namespace=~"$namespace"}[${RATE}]))`,
                legend: '{{namespace}} skipped',
              },
              {
                expr: `sum by (namespace) (increase(kruntimes_schedule_missed_total{namespace=~"$namespace"}[${RATE}]))`,
                legend: '{{namespace}} missed',
              },
            ],
          },
          {
            title: 'Schedule lateness',
            description: 'How late a scheduled Run was created after its scheduled time (a catch-up after downtime shows here).',
            unit: 's',
            targets: quantiles('kruntimes_schedule_lateness_seconds', ''),
          },
        ],
      },
      {
        title: 'Invocations',
        panels: [
          {
            title: 'Gateway requests by code',
            description: 'HTTP responses of the gateway on the invoke routes, by status code.',
            unit: 'reqps',
            targets: [{ expr: `sum by (code) (rate(kruntimes_gateway_requests_total{route!="other"}[${RATE}]))`, legend: '{{code}}' }],
          },
          {
            title: 'Invocations by code (runtimed)',
            description: 'FunctionRuntime calls that runtimed served itself (route local), by outcome code.',
            unit: 'ops',
            targets: [
              {
                expr: `sum by (code) (rate(kruntimes_runtimed_invocations_total{${RUNTIMED}, route="local"}[${RATE}]))`,
                legend: '{{code}}',
              },
            ],
          },
          {
            title: 'Invocations by route (runtimed)',
            description: 'Served locally, forwarded once to the owning peer, or refused.',
            unit: 'ops',
            targets: [
              {
                expr: `sum by (route, port) (rate(kruntimes_runtimed_invocations_total{${RUNTIMED}}[${RATE}]))`,
                legend: '{{route}} ({{port}})',
              },
            ],
          },
          {
            title: 'Gateway latency',
            description: 'Duration of invoke requests at the gateway.',
            unit: 's',
            targets: quantiles('kruntimes_gateway_request_duration_seconds', 'route!="other"'),
          },
          {
            title: 'Gateway overhead',
            description: 'Time the gateway itself added to a forwarded request (total minus the upstream call).',
            unit: 's',
            targets: quantiles('kruntimes_gateway_overhead_seconds', 'route!="other"'),
          },
          {
            title: 'Gateway in-flight requests',
            description: 'Requests being handled by the gateway replicas.',
            unit: 'short',
            targets: [{ expr: 'sum(kruntimes_gateway_inflight_requests)', legend: 'in flight' }],
          },
        ],
      },
      {
        title: 'Authorization',
        panels: [
          {
            title: 'Authorization cache hit ratio',
            description: 'Share of authorization decisions runtimed answered from its cache (no SelfSubjectAccessReview).',
            unit: 'percentunit',
            targets: [
              {
                // `or vector(0)`: no hit yet is a ratio of 0, not an empty panel (the hit series appears with the first hit).
                expr: `(sum(rate(kruntimes_authz_cache_requests_total{${RUNTIMED}, result="hit"}[${RATE}])) or vector(0)) / sum(rate(kruntimes_authz_cache_requests_total{${RUNTIMED}}[${RATE}]))`,
                legend: 'hit ratio',
              },
            ],
          },
          {
            title: 'SelfSubjectAccessReviews by outcome',
            description: 'Reviews sent to the API server.',
            unit: 'ops',
            targets: [{ expr: `sum by (outcome) (rate(kruntimes_authz_reviews_total{${RUNTIMED}}[${RATE}]))`, legend: '{{outcome}}' }],
          },
        ],
      },
      {
        title: 'Runtimes and status writes',
        panels: [
          {
            title: 'Status-write conflicts',
            description: 'Run status writes that lost a resourceVersion race (409), by writer.',
            unit: 'ops',
            targets: [
              { expr: `sum(rate(kruntimes_runtimed_status_write_conflicts_total{${RUNTIMED}}[${RATE}]))`, legend: 'runtimed' },
              { expr: `sum(rate(kruntimes_scheduler_bind_conflicts_total[${RATE}]))`, legend: 'scheduler' },
              { expr: `sum(rate(kruntimes_recovery_status_write_conflicts_total[${RATE}]))`, legend: 'stale-recovery' },
            ],
          },
          {
            title: 'Registered functions per Runtime',
            description: 'Functions registered by the runtimed of each Runtime.',
            unit: 'short',
            targets: [
              {
                expr: `sum by (namespace, runtime) (kruntimes_runtimed_active_functions{${RUNTIMED}})`,
                legend: '{{namespace}}/{{runtime}}',
              },
            ],
          },
          {
            title: 'Registrations by outcome',
            description: 'RegisterFunction calls by runtimed.',
            unit: 'ops',
            targets: [
              { expr: `sum by (outcome) (rate(kruntimes_runtimed_registrations_total{${RUNTIMED}}[${RATE}]))`, legend: '{{outcome}}' },
            ],
          },
          {
            title: 'Task duration',
            description: 'Duration of task executions, by outcome.',
            unit: 's',
            targets: quantiles('kruntimes_runtimed_task_duration_seconds', RUNTIMED, 'outcome'),
          },
          {
            title: 'Pod Lease renewals',
            description: "runtimed's Pod Lease renewals by result; errors make stale-recovery suspect the Pod.",
            unit: 'ops',
            targets: [
              { expr: `sum by (result) (rate(kruntimes_runtimed_lease_renewals_total{${RUNTIMED}}[${RATE}]))`, legend: '{{result}}' },
            ],
          },
        ],
      },
    ],
  },
  {
    uid: 'kruntimes-functions',
    file: 'functions.json',
    title: 'kruntimes / Functions',
    description:
      'Function Runs: invocations, errors, latency, in-flight and idle time per Run, as the owning runtimed serves them; forwarding and registrations per Runtime Pod.',
    variables: [functionNamespaceVariable, functionRuntimeVariable, runVariable],
    rows: [
      {
        title: 'Invocations',
        panels: [
          {
            title: 'Invocations per Run',
            description: 'Invocations served by the owning runtimed, all codes.',
            unit: 'ops',
            targets: [
              {
                expr: `sum by (namespace, runtime, run) (rate(kruntimes_function_invocations_total{${FN}}[${RATE}]))`,
                legend: '{{namespace}}/{{run}}',
              },
            ],
          },
          {
            title: 'Invocations by code',
            description: 'OK or the kruntimes error code (function and platform errors).',
            unit: 'ops',
            targets: [{ expr: `sum by (code) (rate(kruntimes_function_invocations_total{${FN}}[${RATE}]))`, legend: '{{code}}' }],
          },
          {
            title: 'Errors per Run',
            description: 'Invocations that did not end OK, by Run and code.',
            unit: 'ops',
            targets: [
              {
                expr: `sum by (run, code) (rate(kruntimes_function_invocations_total{${FN}, code!="OK"}[${RATE}]))`,
                legend: '{{run}} {{code}}',
              },
            ],
          },
          {
            title: 'Error ratio per Run',
            description: 'Share of invocations that did not end OK.',
            unit: 'percentunit',
            targets: [
              {
                // A Run without a failed invocation shows 0 (its error series do not exist until the first failure), not nothing.
                expr: `(sum by (run) (rate(kruntimes_function_invocations_total{${FN}, code!="OK"}[${RATE}])) or sum by (run) (rate(kruntimes_function_invocations_total{${FN}}[${RATE}])) * 0) / sum by (run) (rate(kruntimes_function_invocations_total{${FN}}[${RATE}]))`,
                legend: '{{run}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Latency and load',
        panels: [
          {
            title: 'Latency per Run',
            description: 'Duration of invocations at the owning runtimed (Runtime Server included).',
            unit: 's',
            targets: quantiles('kruntimes_function_invocation_duration_seconds', FN, 'run'),
          },
          {
            title: 'In-flight invocations',
            description: 'Invocations being served, per Run.',
            unit: 'short',
            targets: [{ expr: `sum by (run) (kruntimes_function_inflight{${FN}})`, legend: '{{run}}' }],
          },
          {
            title: 'Idle time',
            description: 'Seconds since the last invocation ended (or since the Run became Ready); 0 while one is in flight.',
            unit: 's',
            targets: [{ expr: `min by (run) (kruntimes_function_idle_seconds{${FN}})`, legend: '{{run}}' }],
          },
        ],
      },
      {
        title: 'Runtime Pods',
        panels: [
          {
            title: 'Peer hops',
            description: 'Requests that reached a runtimed other than the owner and were forwarded once.',
            unit: 'ops',
            targets: [
              {
                expr: `sum by (pod) (rate(kruntimes_runtimed_invocations_total{${RUNTIMED}, route="forwarded"}[${RATE}]))`,
                legend: '{{pod}}',
              },
            ],
          },
          {
            title: 'Registered functions per Pod',
            description: 'Functions registered on each Runtime Pod.',
            unit: 'short',
            targets: [{ expr: `sum by (pod) (kruntimes_runtimed_active_functions{${RUNTIMED}})`, legend: '{{pod}}' }],
          },
          {
            title: 'Registrations by outcome',
            description: 'RegisterFunction calls by runtimed.',
            unit: 'ops',
            targets: [
              { expr: `sum by (outcome) (rate(kruntimes_runtimed_registrations_total{${RUNTIMED}}[${RATE}]))`, legend: '{{outcome}}' },
            ],
          },
        ],
      },
    ],
  },
];

/** Every PromQL expression of a dashboard (panel targets and variable queries' inner selectors). */
export function expressions(dashboard: Dashboard): { where: string; expr: string }[] {
  return dashboard.rows.flatMap((row) =>
    row.panels.flatMap((panel) => panel.targets.map((target) => ({ where: `${dashboard.uid} / ${panel.title}`, expr: target.expr }))),
  );
}

/** The selector inside a `label_values(selector, label)` variable query. */
export function variableSelector(query: string): string {
  const match = /^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/.exec(query);
  if (match?.[1] === undefined) throw new Error(`not a label_values(selector, label) query: ${query}`);
  return match[1];
}

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };
const WIDTH = 24;

/** Grafana's dashboard JSON (schema 39) of a dashboard. */
export function renderDashboard(dashboard: Dashboard): string {
  let id = 0;
  let y = 0;
  const panels: unknown[] = [];
  for (const row of dashboard.rows) {
    panels.push({ id: ++id, type: 'row', title: row.title, collapsed: false, gridPos: { x: 0, y, w: WIDTH, h: 1 }, panels: [] });
    y += 1;
    const perLine = row.panels.length % 3 === 0 || row.panels.length > 4 ? 3 : 2;
    const width = WIDTH / perLine;
    row.panels.forEach((panel, i) => {
      const x = (i % perLine) * width;
      if (i > 0 && i % perLine === 0) y += 8;
      panels.push({
        id: ++id,
        type: panel.type ?? 'timeseries',
        title: panel.title,
        description: panel.description,
        datasource: DATASOURCE,
        gridPos: { x, y, w: width, h: 8 },
        fieldConfig: { defaults: { unit: panel.unit, ...(panel.unit === 'percentunit' ? { min: 0, max: 1 } : {}) }, overrides: [] },
        options: { legend: { displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } },
        targets: panel.targets.map((target, t) => ({
          refId: String.fromCodePoint(65 + t),
          datasource: DATASOURCE,
          expr: target.expr,
          legendFormat: target.legend,
          range: true,
        })),
      });
    });
    y += 8;
  }
  const json = {
    uid: dashboard.uid,
    title: dashboard.title,
    description: dashboard.description,
    tags: ['kruntimes'],
    timezone: 'utc',
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    annotations: { list: [] },
    links: [],
    templating: {
      list: [
        { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {}, hide: 0, refresh: 1 },
        ...dashboard.variables.map((variable) => ({
          name: variable.name,
          label: variable.label,
          type: 'query',
          datasource: DATASOURCE,
          query: { query: variable.query, refId: `${variable.name}-query` },
          definition: variable.query,
          refresh: 2,
          multi: true,
          includeAll: true,
          allValue: '.*',
          current: {},
          sort: 1,
          hide: 0,
        })),
      ],
    },
    panels,
  };
  return `${JSON.stringify(json, null, 2)}\n`;
}
