import { startMetricsEndpoint } from './metrics-endpoint.ts';
import { parseListenAddress } from './plaintext-endpoint.ts';

describe('the metrics endpoint', () => {
  it('serves /metrics, refuses an Authorization header with 400 and anything else with 404', async () => {
    let scrapes = 0;
    const endpoint = await startMetricsEndpoint('127.0.0.1:0', () => `kruntimes_scrapes_total ${String((scrapes += 1))}\n`);
    const base = `http://127.0.0.1:${String(endpoint.address.port)}`;
    try {
      const served = await fetch(`${base}/metrics`);
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toContain('text/plain');
      expect(await served.text()).toBe('kruntimes_scrapes_total 1\n');

      const refused = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer x' } });
      expect(refused.status).toBe(400);
      await refused.text();
      expect(scrapes).toBe(1);

      for (const [path, method] of [
        ['/other', 'GET'],
        ['/metrics', 'POST'],
      ] as const) {
        const other = await fetch(`${base}${path}`, { method });
        expect(other.status).toBe(404);
        await other.text();
      }
    } finally {
      await endpoint.close();
    }
  });

  it.each([
    [':9090', { host: undefined, port: 9090 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['[::1]:9090', { host: '::1', port: 9090 }],
  ])('parses %s', (address, expected) => {
    expect(parseListenAddress(address)).toEqual(expected);
  });

  it.each(['9090', 'host:', 'host:70000', 'host:1.5'])('refuses %s', (address) => {
    expect(() => parseListenAddress(address)).toThrow('HOST:PORT');
  });
});
