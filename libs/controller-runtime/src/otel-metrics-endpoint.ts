import type { AddressInfo } from 'node:net';
import type { Meter } from '@opentelemetry/api';
import { observeProcessGauges } from './process-metrics.ts';
import { metricsRoutes, startPlaintextEndpoint } from './plaintext-endpoint.ts';
import type { ListenAddress } from './plaintext-endpoint.ts';

export interface OtelMetricsEndpointOptions<Instruments> {
  listen: ListenAddress;
  /** The meter's instrumentation scope (the exposition carries no scope info). */
  scope: string;
  /** The service's instruments on the meter; the process gauges (PROCESS_GAUGES) are added after them. */
  instruments: (meter: Meter) => Instruments;
  /** Prometheus text served after the OpenTelemetry families. */
  trailer?: () => string;
  /**
   * A collection error (an instrument's callback threw): `serve` what was collected, as the
   * exporter's own server does, or `fail` the scrape (500 naming the errors).
   */
  collectionErrors: 'serve' | 'fail';
}

export interface OtelMetricsEndpoint<Instruments> {
  instruments: Instruments;
  address: AddressInfo;
  /** Closes the listener, then shuts the MeterProvider down. */
  close(): Promise<void>;
}

/**
 * A service's OpenTelemetry metrics (one MeterProvider read by the Prometheus exporter's
 * reader) served as Prometheus text on `/metrics` of a plaintext endpoint, so that the one
 * rule for credentials applies (startPlaintextEndpoint) rather than the exporter's own server.
 * Names as Prometheus sees them: no prefix, no unit suffix appended, no timestamps, with
 * `target_info`, without scope info. The SDK is loaded here, not when the lib is imported:
 * the services without OpenTelemetry metrics never load it.
 */
export async function startOtelMetricsEndpoint<Instruments>(
  options: OtelMetricsEndpointOptions<Instruments>,
): Promise<OtelMetricsEndpoint<Instruments>> {
  const [{ PrometheusExporter, PrometheusSerializer }, { MeterProvider }] = await Promise.all([
    import('@opentelemetry/exporter-prometheus'),
    import('@opentelemetry/sdk-metrics'),
  ]);
  const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  // The exporter's own options (prefix none, no timestamps, with target_info, without scope info).
  const serializer = new PrometheusSerializer('', false, undefined, false, true);
  const provider = new MeterProvider({ readers: [exporter] });
  const meter = provider.getMeter(options.scope);
  const instruments = options.instruments(meter);
  observeProcessGauges(meter);
  const render = async (): Promise<string> => {
    const { resourceMetrics, errors } = await exporter.collect();
    if (errors.length > 0 && options.collectionErrors === 'fail') throw new AggregateError(errors, 'metrics collection failed');
    return serializer.serialize(resourceMetrics) + (options.trailer?.() ?? '');
  };
  const endpoint = await startPlaintextEndpoint(options.listen, metricsRoutes(render));
  return {
    instruments,
    address: endpoint.address,
    close: async () => {
      await endpoint.close();
      await provider.shutdown();
    },
  };
}
