import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PlaintextEndpoint {
  address: AddressInfo;
  close(): Promise<void>;
}

/** What a plaintext endpoint answers a GET or HEAD of `path`: status and text body. */
export type PlaintextRoutes = Readonly<Record<string, () => { status: number; body: string }>>;

/**
 * A plaintext HTTP listener on `HOST:PORT` answering GET and HEAD of its routes (404
 * otherwise). No plaintext port of kruntimes takes a credential, so a request carrying an
 * Authorization header is refused with 400 rather than answered: a token sent here by
 * mistake goes no further.
 */
export async function startPlaintextEndpoint(address: string, flag: string, routes: PlaintextRoutes): Promise<PlaintextEndpoint> {
  const { host, port } = parseListenAddress(address, flag);
  const server = createServer((request, response) => {
    answer(request, response, routes);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      // The service's own work keeps the process alive; a plaintext listener never should.
      server.unref();
      resolve();
    });
  });
  return { address: server.address() as AddressInfo, close: () => closeServer(server) };
}

function answer(request: IncomingMessage, response: ServerResponse, routes: PlaintextRoutes): void {
  if (request.headers.authorization !== undefined) {
    response.writeHead(400, { 'content-type': 'text/plain' }).end('this port takes no Authorization header\n');
    return;
  }
  const path = (request.url ?? '').split('?')[0] ?? '';
  const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
  if (route === undefined || (request.method !== 'GET' && request.method !== 'HEAD')) {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  const { status, body } = route();
  const type = path === '/metrics' ? 'text/plain; version=0.0.4' : 'text/plain';
  response.writeHead(status, { 'content-type': type }).end(request.method === 'HEAD' ? undefined : body);
}

/** `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (every interface); `flag` names it in the error. */
export function parseListenAddress(address: string, flag = 'metrics-address'): { host: string | undefined; port: number } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65_535 || address.slice(colon + 1) === '')
    throw new Error(`--${flag} must be HOST:PORT, not ${JSON.stringify(address)}`);
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
