import type { AddressInfo } from 'node:net';
import type { Meter } from '@opentelemetry/api';
import { startOtelMetricsEndpoint } from '@kruntimes/controller-runtime';

/** Route label values: the two invoke paths, and everything else. */
export type RouteLabel = 'functions' | 'runs' | 'other';

/**
 * What the gateway counts. An interface so that the request handling does not depend
 * on the exporter (tests pass NO_METRICS or a recorder).
 */
export interface GatewayMetrics {
  requestStarted(): void;
  /** `upstreamSeconds` is undefined when the request never reached runtimed. */
  requestFinished(route: RouteLabel, status: number, seconds: number, upstreamSeconds: number | undefined): void;
}

export const NO_METRICS: GatewayMetrics = {
  requestStarted: () => undefined,
  requestFinished: () => undefined,
};

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600];
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export interface MetricsServer {
  metrics: GatewayMetrics;
  address: AddressInfo;
  shutdown(): Promise<void>;
}

/**
 * The gateway's metrics through the OpenTelemetry SDK (like runtimed's), served as
 * Prometheus text on a separate plaintext port, names as Prometheus sees them:
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `kruntimes_gateway_requests_total` | counter | `route` (functions, runs, other), `code` (HTTP status) |
 * | `kruntimes_gateway_request_duration_seconds` | histogram | `route` |
 * | `kruntimes_gateway_overhead_seconds` | histogram | `route`: total minus the time waiting for runtimed |
 * | `kruntimes_gateway_inflight_requests` | gauge | |
 * | `kruntimes_process_heap_used_bytes`, `kruntimes_process_resident_bytes`, `kruntimes_process_event_loop_delay_p99_seconds` | gauge | (PROCESS_GAUGES of controller-runtime) |
 *
 * Served by controller-runtime's startOtelMetricsEndpoint rather than the exporter's own
 * server, so that any request carrying a credential is refused (400): a token must never travel in
 * plaintext, and a client that sends one here is misconfigured.
 */
export async function startMetricsServer(host: string, port: number): Promise<MetricsServer> {
  // Collection errors are the SDK's to report; what was collected is still served, as the exporter's server does.
  const endpoint = await startOtelMetricsEndpoint({
    listen: { host, port },
    scope: 'kruntimes.gateway',
    instruments: createInstruments,
    collectionErrors: 'serve',
  });
  const { requests, duration, overhead, inflight } = endpoint.instruments;
  return {
    address: endpoint.address,
    metrics: {
      requestStarted: () => {
        inflight.add(1);
      },
      requestFinished: (route, status, seconds, upstreamSeconds) => {
        inflight.add(-1);
        requests.add(1, { route, code: String(status) });
        duration.record(seconds, { route });
        if (upstreamSeconds !== undefined) overhead.record(Math.max(0, seconds - upstreamSeconds), { route });
      },
    },
    shutdown: () => endpoint.close(),
  };
}

/** The instruments behind the gateway's families of the table above. */
function createInstruments(meter: Meter) {
  const requests = meter.createCounter('kruntimes.gateway.requests', {
    description: 'HTTP requests answered by the gateway, by route and status code',
  });
  // Named with the unit: this exporter appends no unit suffix.
  const duration = meter.createHistogram('kruntimes.gateway.request.duration.seconds', {
    description: 'Duration of HTTP requests, from the request to the end of the response',
    unit: 's',
    advice: { explicitBucketBoundaries: LATENCY_BUCKETS },
  });
  const overhead = meter.createHistogram('kruntimes.gateway.overhead.seconds', {
    description: 'Time the gateway itself added to a forwarded request (total minus the upstream call)',
    unit: 's',
    advice: { explicitBucketBoundaries: OVERHEAD_BUCKETS },
  });
  const inflight = meter.createUpDownCounter('kruntimes.gateway.inflight_requests', { description: 'HTTP requests being handled' });
  inflight.add(0);
  return { requests, duration, overhead, inflight };
}
