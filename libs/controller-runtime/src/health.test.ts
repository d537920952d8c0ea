import { startHealthEndpoint } from './health-endpoint.ts';
import { decideReadiness } from './health.ts';
import type { ManagerPhase } from './health.ts';

describe('decideReadiness', () => {
  it.each([
    ['starting', false, 'starting'],
    ['standby', true, 'standby: another replica leads'],
    ['syncing', false, 'leading: informers not synced or controllers not started'],
    ['running', true, 'informers synced; running'],
    ['stopping', false, 'stopping'],
  ] as const)('%s: ready %s (%s)', (phase, ready, reason) => {
    expect(decideReadiness(phase)).toEqual({ ready, reason });
  });
});

describe('the health endpoint', () => {
  it('answers /healthz 200 in every phase, /readyz by decideReadiness, 400 to an Authorization header, 404 otherwise', async () => {
    let phase: ManagerPhase = 'syncing';
    const endpoint = await startHealthEndpoint('127.0.0.1:0', () => phase);
    const base = `http://127.0.0.1:${String(endpoint.address.port)}`;
    const get = async (path: string, init: RequestInit = {}): Promise<[number, string]> => {
      const response = await fetch(`${base}${path}`, init);
      return [response.status, await response.text()];
    };
    try {
      expect(await get('/healthz')).toEqual([200, 'ok\n']);
      expect(await get('/readyz')).toEqual([503, 'leading: informers not synced or controllers not started\n']);
      phase = 'running';
      expect(await get('/readyz')).toEqual([200, 'informers synced; running\n']);
      phase = 'standby';
      expect(await get('/readyz?verbose')).toEqual([200, 'standby: another replica leads\n']);
      phase = 'stopping';
      expect(await get('/healthz')).toEqual([200, 'ok\n']);
      expect((await get('/readyz'))[0]).toBe(503);
      expect((await get('/readyz', { headers: { authorization: 'Bearer x' } }))[0]).toBe(400);
      expect((await get('/metrics'))[0]).toBe(404);
      expect((await get('/healthz', { method: 'POST' }))[0]).toBe(404);
    } finally {
      await endpoint.close();
    }
  });

  it('names its flag when the address is wrong', async () => {
    await expect(startHealthEndpoint('8081', () => 'running')).rejects.toThrow('--health-address must be HOST:PORT');
  });
});
