import type { Meter } from '@opentelemetry/api';
import { startOtelMetricsEndpoint } from '@kruntimes/controller-runtime';
import { FunctionMetrics } from './function-metrics.ts';
import type { RuntimedMetrics } from './metrics.ts';

export interface PrometheusMetrics {
  metrics: RuntimedMetrics;
  /** The bound port (the one asked for, or the one chosen for 0). */
  port: number;
  shutdown(): Promise<void>;
}

/**
 * runtimed's metrics through the OpenTelemetry SDK, served for Prometheus at
 * `http://<host>:<port>/metrics` (names as Prometheus sees them):
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `kruntimes_runtimed_registrations_total` | counter | `outcome`: registered, reused, failed, indeterminate |
 * | `kruntimes_runtimed_active_functions` | gauge | |
 * | `kruntimes_runtimed_task_duration_seconds` | histogram | `outcome`: succeeded, failed, timeout, cancelled, released, waiting_input, drain_window_exceeded |
 * | `kruntimes_runtimed_status_write_conflicts_total` | counter | |
 * | `kruntimes_runtimed_lease_renewals_total` | counter | `result`: ok, error |
 * | `kruntimes_runtimed_invocations_total` | counter | `port`: grpc, peer; `route`: local, forwarded, refused; `code`: OK or the error code |
 * | `kruntimes_authz_cache_requests_total` | counter | `result`: hit, miss |
 * | `kruntimes_authz_reviews_total` | counter | `outcome`: allowed, denied, unauthenticated, error |
 * | `kruntimes_process_heap_used_bytes`, `kruntimes_process_resident_bytes`, `kruntimes_process_event_loop_delay_p99_seconds` | gauge | (PROCESS_GAUGES of controller-runtime) |
 *
 * After these, the per-function Run families of `FunctionMetrics` (function-metrics.ts).
 *
 * Served by controller-runtime's startOtelMetricsEndpoint (a scrape fails, 500, when a
 * collection fails), on its plaintext endpoint: GET or HEAD of `/metrics` only, and any
 * request carrying a credential refused (400): nothing here needs one, and one sent by
 * mistake must not travel further or end up in a log.
 */
export async function startPrometheusMetrics(host: string, port: number): Promise<PrometheusMetrics> {
  const functions = new FunctionMetrics();
  const endpoint = await startOtelMetricsEndpoint({
    listen: { host, port },
    scope: 'kruntimes.runtimed',
    instruments: createInstruments,
    trailer: () => functions.render(),
    collectionErrors: 'fail',
  });
  return {
    port: endpoint.address.port,
    metrics: recordingTo(endpoint.instruments, functions),
    shutdown: () => endpoint.close(),
  };
}

type Instruments = ReturnType<typeof createInstruments>;

/** The instruments behind the families of the table above. */
function createInstruments(meter: Meter) {
  const registrations = meter.createCounter('kruntimes.runtimed.registrations', {
    description: 'RegisterFunction calls by runtimed, by outcome',
  });
  // Named with its unit: this exporter does not append Prometheus unit suffixes.
  const taskDuration = meter.createHistogram('kruntimes.runtimed.task.duration.seconds', {
    description: 'Duration of task executions, by outcome',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14_400] },
  });
  const conflicts = meter.createCounter('kruntimes.runtimed.status_write_conflicts', {
    description: 'Run writes that lost a resourceVersion race (409) and were retried',
  });
  // Exported from the start (at 0), so that a rate() over it never starts from absence.
  conflicts.add(0);
  const leaseRenewals = meter.createCounter('kruntimes.runtimed.lease_renewals', { description: 'Pod Lease renewals, by result' });
  const invocations = meter.createCounter('kruntimes.runtimed.invocations', {
    description: 'FunctionRuntime calls by port, route and outcome code',
  });
  const authzCache = meter.createCounter('kruntimes.authz.cache_requests', {
    description: 'Authorization decisions asked of the cache, by result',
  });
  const authzReviews = meter.createCounter('kruntimes.authz.reviews', { description: 'SelfSubjectAccessReviews sent, by outcome' });
  const activeFunctions = meter.createObservableGauge('kruntimes.runtimed.active_functions', {
    description: 'Functions registered by this runtimed',
  });
  return { registrations, taskDuration, conflicts, leaseRenewals, invocations, authzCache, authzReviews, activeFunctions };
}

function recordingTo(instruments: Instruments, functions: FunctionMetrics): RuntimedMetrics {
  const { registrations, taskDuration, conflicts, leaseRenewals, invocations, authzCache, authzReviews, activeFunctions } = instruments;
  return {
    registration: (outcome) => {
      registrations.add(1, { outcome });
    },
    taskFinished: (outcome, seconds) => {
      taskDuration.record(seconds, { outcome });
    },
    statusConflict: () => {
      conflicts.add(1);
    },
    leaseRenewal: (ok) => {
      leaseRenewals.add(1, { result: ok ? 'ok' : 'error' });
    },
    invocation: (outcome) => {
      invocations.add(1, { port: outcome.port, route: outcome.route, code: outcome.code });
    },
    authz: {
      cacheRequest: (result) => {
        authzCache.add(1, { result });
      },
      review: (outcome) => {
        authzReviews.add(1, { outcome });
      },
    },
    observeActiveFunctions: (count) => {
      activeFunctions.addCallback((result) => {
        result.observe(count());
      });
    },
    functions,
  };
}
