import type { Runnable } from './manager.ts';
import { metricsRoutes, parseListenAddress, startPlaintextEndpoint } from './plaintext-endpoint.ts';
import type { PlaintextEndpoint } from './plaintext-endpoint.ts';

export type MetricsEndpoint = PlaintextEndpoint;

/**
 * Serves `GET /metrics` (Prometheus text, plaintext) on `HOST:PORT` for the services whose
 * metrics are rendered in process; a request carrying a credential gets 400.
 */
export async function startMetricsEndpoint(address: string, render: () => string): Promise<MetricsEndpoint> {
  return startPlaintextEndpoint(parseListenAddress(address, 'metrics-address'), metricsRoutes(render));
}

/**
 * The metrics endpoint as a runnable of every replica (no leader election): a standby
 * serves it too, with only what its own process counts.
 */
export function metricsEndpointRunnable(
  address: string,
  render: () => string,
  logger: { info(object: object, message: string): void },
): Runnable {
  let endpoint: MetricsEndpoint | undefined;
  return {
    name: 'the metrics endpoint',
    needsLeaderElection: false,
    start: async () => {
      endpoint = await startMetricsEndpoint(address, render);
      logger.info({ address: endpoint.address }, 'metrics listening');
    },
    stop: () => endpoint?.close(),
  };
}
