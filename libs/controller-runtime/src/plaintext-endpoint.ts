import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PlaintextEndpoint {
  address: AddressInfo;
  close(): Promise<void>;
}

/** Where a plaintext endpoint listens; an undefined host is every interface. */
export interface ListenAddress {
  host: string | undefined;
  port: number;
}

/** What a route answers: status, content type (`text/plain` when left out) and text body. */
export interface PlaintextAnswer {
  status: number;
  contentType?: string;
  body: string;
}

/** The answer of a GET or HEAD of the route's path. A route that throws is answered 500. */
export type PlaintextRoute = () => PlaintextAnswer | Promise<PlaintextAnswer>;

/** Path (without the query) to its route. */
export type PlaintextRoutes = Readonly<Record<string, PlaintextRoute>>;

/** The request as decidePlaintextRequest reads it. */
export interface PlaintextRequest {
  method?: string | undefined;
  url?: string | undefined;
  headers: IncomingHttpHeaders;
}

/** A fixed answer (a refusal, an unknown path), or the path of the route to call. */
export type PlaintextDecision = { action: 'answer'; answer: PlaintextAnswer } | { action: 'route'; path: string };

/**
 * Headers that carry a credential. No plaintext port of kruntimes takes one, so a request
 * carrying any of them is refused rather than answered: a credential sent here by mistake
 * (a scrape config with a bearer token, a browser's session cookie) goes no further, and
 * the client learns of its misconfiguration instead of being served anyway.
 */
export const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'] as const;

const CREDENTIALS_REFUSED: PlaintextAnswer = {
  status: 400,
  body: 'this plaintext port takes no credentials (Authorization, Proxy-Authorization or Cookie header)\n',
};
const NOT_FOUND: PlaintextAnswer = { status: 404, body: 'not found\n' };

/**
 * The one rule of every plaintext endpoint: a request carrying a credential is refused (400)
 * whatever its path or method; then GET and HEAD of a known path are served, and anything
 * else is 404 (a method other than GET or HEAD too: the endpoint serves nothing else, and
 * answering as if the path did not exist tells a prober no more).
 */
export function decidePlaintextRequest(request: PlaintextRequest, routes: PlaintextRoutes): PlaintextDecision {
  if (CREDENTIAL_HEADERS.some((name) => request.headers[name] !== undefined)) return { action: 'answer', answer: CREDENTIALS_REFUSED };
  const path = (request.url ?? '').split('?')[0] ?? '';
  if (!Object.hasOwn(routes, path) || (request.method !== 'GET' && request.method !== 'HEAD'))
    return { action: 'answer', answer: NOT_FOUND };
  return { action: 'route', path };
}

/**
 * A plaintext HTTP listener answering its routes by decidePlaintextRequest. It is unref'd:
 * the service's own work keeps the process alive, a plaintext listener never should.
 */
export async function startPlaintextEndpoint(listen: ListenAddress, routes: PlaintextRoutes): Promise<PlaintextEndpoint> {
  const server = createServer((request, response) => {
    // Only writeHead of an invalid answer can fail here; the client then gets a reset.
    answer(request, response, routes).catch(() => response.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      server.unref();
      resolve();
    });
  });
  return { address: server.address() as AddressInfo, close: () => closeServer(server) };
}

async function answer(request: IncomingMessage, response: ServerResponse, routes: PlaintextRoutes): Promise<void> {
  const decision = decidePlaintextRequest(request, routes);
  const answered = decision.action === 'answer' ? decision.answer : await served(routes[decision.path]);
  response
    .writeHead(answered.status, { 'content-type': answered.contentType ?? 'text/plain' })
    .end(request.method === 'HEAD' ? undefined : answered.body);
}

async function served(route: PlaintextRoute | undefined): Promise<PlaintextAnswer> {
  try {
    return route === undefined ? NOT_FOUND : await route();
  } catch {
    // The error may say more than a plaintext port should; the service logs its own failures.
    return { status: 500, body: 'internal error\n' };
  }
}

/** The Prometheus text exposition format's content type. */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4';

/**
 * `/metrics`, Prometheus text from `render`. A render that fails is answered 500 with a
 * comment naming the failure (a metrics collection error, no request data), as the
 * OpenTelemetry exporter's own server does, so that a scrape shows why it is empty.
 */
export function metricsRoutes(render: () => string | Promise<string>): PlaintextRoutes {
  return {
    '/metrics': async () => {
      try {
        return { status: 200, contentType: PROMETHEUS_TEXT, body: await render() };
      } catch (error) {
        return { status: 500, body: `# failed to export metrics: ${String(error)}\n` };
      }
    },
  };
}

/** `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (every interface); `flag` names it in the error. */
export function parseListenAddress(address: string, flag = 'metrics-address'): ListenAddress {
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
