import { decideReadiness } from './health.ts';
import type { ManagerPhase } from './health.ts';
import type { Runnable } from './manager.ts';
import { parseListenAddress, startPlaintextEndpoint } from './plaintext-endpoint.ts';
import type { PlaintextEndpoint } from './plaintext-endpoint.ts';

export type HealthEndpoint = PlaintextEndpoint;

/**
 * Serves the kubelet's probes, plaintext, on `HOST:PORT` (`--health-address`):
 * - `/healthz` (liveness): 200 whenever it is answered. The answer is the check: it needs
 *   the process alive and its event loop turning, and nothing else, so that a replica
 *   waiting for the Lease or for the API server is never restarted for it.
 * - `/readyz` (readiness): decideReadiness of the phase: 200 for a standby and for a
 *   leader whose informers synced, 503 otherwise; the body says which.
 */
export async function startHealthEndpoint(address: string, phase: () => ManagerPhase): Promise<HealthEndpoint> {
  return startPlaintextEndpoint(parseListenAddress(address, 'health-address'), {
    '/healthz': () => ({ status: 200, body: 'ok\n' }),
    '/readyz': () => {
      const { ready, reason } = decideReadiness(phase());
      return { status: ready ? 200 : 503, body: `${reason}\n` };
    },
  });
}

/** The health endpoint of a Manager's process, on every replica: a standby answers too. */
export function healthEndpointRunnable(
  address: string,
  manager: { readonly phase: ManagerPhase },
  logger: { info(object: object, message: string): void },
): Runnable {
  let endpoint: HealthEndpoint | undefined;
  return {
    name: 'the health endpoint',
    needsLeaderElection: false,
    start: async () => {
      endpoint = await startHealthEndpoint(address, () => manager.phase);
      logger.info({ address: endpoint.address }, 'health probes listening');
    },
    stop: () => endpoint?.close(),
  };
}
