import type { IncomingHttpHeaders } from 'node:http';
import { PROMETHEUS_TEXT, decidePlaintextRequest, metricsRoutes, startPlaintextEndpoint } from './plaintext-endpoint.ts';
import type { PlaintextDecision, PlaintextRoutes } from './plaintext-endpoint.ts';

const ROUTES: PlaintextRoutes = {
  '/metrics': () => ({ status: 200, body: 'x 1\n' }),
  '/healthz': () => ({ status: 200, body: 'ok\n' }),
};

const refused = { action: 'answer', answer: { status: 400, body: expect.stringContaining('takes no credentials') as string } };
const notFound: PlaintextDecision = { action: 'answer', answer: { status: 404, body: 'not found\n' } };

describe('decidePlaintextRequest', () => {
  it.each<[string, string | undefined, string | undefined, IncomingHttpHeaders, unknown]>([
    ['GET of a route', 'GET', '/metrics', {}, { action: 'route', path: '/metrics' }],
    ['HEAD of a route', 'HEAD', '/healthz', {}, { action: 'route', path: '/healthz' }],
    ['a query is not part of the path', 'GET', '/healthz?verbose', {}, { action: 'route', path: '/healthz' }],
    ['an unknown path', 'GET', '/other', {}, notFound],
    ['the root', 'GET', '/', {}, notFound],
    ['no URL', 'GET', undefined, {}, notFound],
    ['a path of Object.prototype', 'GET', '/constructor', {}, notFound],
    ['a trailing slash', 'GET', '/metrics/', {}, notFound],
    ['POST of a route', 'POST', '/metrics', {}, notFound],
    ['PUT of a route', 'PUT', '/metrics', {}, notFound],
    ['DELETE of a route', 'DELETE', '/healthz', {}, notFound],
    ['OPTIONS of a route', 'OPTIONS', '/metrics', {}, notFound],
    ['no method', undefined, '/metrics', {}, notFound],
    ['an Authorization header', 'GET', '/metrics', { authorization: 'Bearer x' }, refused],
    ['an empty Authorization header', 'GET', '/metrics', { authorization: '' }, refused],
    ['a Proxy-Authorization header', 'GET', '/metrics', { 'proxy-authorization': 'Basic eDp5' }, refused],
    ['a cookie', 'GET', '/healthz', { cookie: 'session=1' }, refused],
    ['a credential on an unknown path', 'GET', '/other', { authorization: 'Bearer x' }, refused],
    ['a credential with another method', 'POST', '/metrics', { cookie: 'a=b' }, refused],
    ['other headers', 'GET', '/metrics', { accept: 'text/plain', 'user-agent': 'Prometheus' }, { action: 'route', path: '/metrics' }],
  ])('%s', (_name, method, url, headers, expected) => {
    expect(decidePlaintextRequest({ method, url, headers }, ROUTES)).toEqual(expected);
  });
});

describe('the plaintext endpoint', () => {
  it('serves its routes, HEAD without a body, a failing route as 500; refuses credentials before calling a route', async () => {
    let calls = 0;
    const endpoint = await startPlaintextEndpoint(
      { host: '127.0.0.1', port: 0 },
      {
        ...metricsRoutes(() => `x_total ${String((calls += 1))}\n`),
        '/json': () => ({ status: 201, contentType: 'application/json', body: '{}' }),
        '/throws': () => {
          throw new Error('secret detail');
        },
        '/failing-metrics': metricsRoutes(() => Promise.reject(new Error('collection failed')))['/metrics']!,
      },
    );
    const base = `http://127.0.0.1:${String(endpoint.address.port)}`;
    const call = async (path: string, init: RequestInit = {}): Promise<[number, string | null, string]> => {
      const response = await fetch(`${base}${path}`, init);
      return [response.status, response.headers.get('content-type'), await response.text()];
    };
    try {
      expect(await call('/metrics')).toEqual([200, PROMETHEUS_TEXT, 'x_total 1\n']);
      expect(await call('/metrics', { method: 'HEAD' })).toEqual([200, PROMETHEUS_TEXT, '']);
      expect(await call('/json')).toEqual([201, 'application/json', '{}']);
      expect(await call('/throws')).toEqual([500, 'text/plain', 'internal error\n']);
      expect(await call('/failing-metrics')).toEqual([500, 'text/plain', '# failed to export metrics: Error: collection failed\n']);
      expect((await call('/metrics', { headers: { cookie: 'a=b' } }))[0]).toBe(400);
      expect((await call('/metrics', { headers: { authorization: 'Bearer x' } }))[0]).toBe(400);
      expect(calls).toBe(2);
      expect(await call('/nothing')).toEqual([404, 'text/plain', 'not found\n']);
    } finally {
      await endpoint.close();
    }
  });

  it('closes with a connection still open', async () => {
    const endpoint = await startPlaintextEndpoint({ host: '127.0.0.1', port: 0 }, ROUTES);
    const url = `http://127.0.0.1:${String(endpoint.address.port)}/healthz`;
    expect((await fetch(url, { keepalive: true })).status).toBe(200);
    await endpoint.close();
    await expect(fetch(url)).rejects.toThrow();
  });

  it('fails to start on a port in use', async () => {
    const first = await startPlaintextEndpoint({ host: '127.0.0.1', port: 0 }, ROUTES);
    try {
      await expect(startPlaintextEndpoint({ host: '127.0.0.1', port: first.address.port }, ROUTES)).rejects.toThrow('EADDRINUSE');
    } finally {
      await first.close();
    }
  });
});
