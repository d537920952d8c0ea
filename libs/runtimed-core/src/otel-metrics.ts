import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { RuntimedMetrics } from './metrics.ts';

export interface PrometheusMetrics {
  metrics: RuntimedMetrics;
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
 * | `kruntimes_runtimed_task_duration_seconds` | histogram | `outcome`: succeeded, failed, timeout, cancelled, released |
 * | `kruntimes_runtimed_status_write_conflicts_total` | counter | |
 * | `kruntimes_runtimed_lease_renewals_total` | counter | `result`: ok, error |
 */
export async function startPrometheusMetrics(host: string, port: number): Promise<PrometheusMetrics> {
  const exporter = new PrometheusExporter({ host, port, endpoint: '/metrics', preventServerStart: true, withoutScopeInfo: true });
  await exporter.startServer();
  const provider = new MeterProvider({ readers: [exporter] });
  const meter = provider.getMeter('kruntimes.runtimed');
  const registrations = meter.createCounter('kruntimes.runtimed.registrations', { description: 'RegisterFunction calls by runtimed, by outcome' });
  // Named with its unit: this exporter does not append Prometheus unit suffixes.
  const taskDuration = meter.createHistogram('kruntimes.runtimed.task.duration.seconds', {
    description: 'Duration of task executions, by outcome',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14_400] },
  });
  const conflicts = meter.createCounter('kruntimes.runtimed.status_write_conflicts', { description: 'Run writes that lost a resourceVersion race (409) and were retried' });
  // Exported from the start (at 0), so that a rate() over it never starts from absence.
  conflicts.add(0);
  const leaseRenewals = meter.createCounter('kruntimes.runtimed.lease_renewals', { description: 'Pod Lease renewals, by result' });
  const activeFunctions = meter.createObservableGauge('kruntimes.runtimed.active_functions', { description: 'Functions registered by this runtimed' });
  return {
    metrics: {
      registration: (outcome) => { registrations.add(1, { outcome }); },
      taskFinished: (outcome, seconds) => { taskDuration.record(seconds, { outcome }); },
      statusConflict: () => { conflicts.add(1); },
      leaseRenewal: (ok) => { leaseRenewals.add(1, { result: ok ? 'ok' : 'error' }); },
      observeActiveFunctions: (count) => {
        activeFunctions.addCallback((result) => { result.observe(count()); });
      },
    },
    shutdown: async () => {
      await provider.shutdown();
      await exporter.stopServer();
    },
  };
}
