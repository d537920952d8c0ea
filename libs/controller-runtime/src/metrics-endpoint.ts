import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Runnable } from './manager.ts';

export interface MetricsEndpoint {
  address: AddressInfo;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text, plaintext) on `HOST:PORT` for the services whose
 * metrics are rendered in process. No plaintext port of kruntimes takes a credential, so a
 * request carrying an Authorization header is refused with 400 rather than answered: a
 * token sent here by mistake goes no further.
 */
export async function startMetricsEndpoint(address: string, render: () => string): Promise<MetricsEndpoint> {
  const { host, port } = parseListenAddress(address);
  const server = createServer((request, response) => {
    if (request.headers.authorization !== undefined) {
      response.writeHead(400, { 'content-type': 'text/plain' }).end('metrics take no Authorization header\n');
      return;
    }
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(request.method === 'HEAD' ? undefined : render());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // The service's own work keeps the process alive; a metrics listener never should.
      server.unref();
      resolve();
    });
  });
  return { address: server.address() as AddressInfo, close: () => closeServer(server) };
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

/** `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (every interface). */
export function parseListenAddress(address: string): { host: string | undefined; port: number } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65_535 || address.slice(colon + 1) === '')
    throw new Error(`--metrics-address must be HOST:PORT, not ${JSON.stringify(address)}`);
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? undefined : host, port };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => {
      if (error === undefined) resolve();
      else reject(error);
    });
    server.closeAllConnections();
  });
}
