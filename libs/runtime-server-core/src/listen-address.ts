import { isIP } from 'node:net';
import { KruntimesError } from '@kruntimes/errors';

/**
 * A Runtime Server runs code for whoever reaches it, so it listens only on a unix
 * socket or a loopback address: `unix:/path`, `127.x.y.z:port`, `[::1]:port` or
 * `localhost:port`. Anything else is refused at startup.
 */
export function checkListenAddress(address: string): string {
  if (address.startsWith('unix:')) {
    if (address.length <= 'unix:'.length) throw new KruntimesError('InvalidRequest', 'unix socket path is empty');
    return address;
  }
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (host === undefined || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new KruntimesError('InvalidRequest', `listen address ${JSON.stringify(address)} is not host:port or unix:/path`);
  }
  const loopback = host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
  if (!loopback) {
    throw new KruntimesError('InvalidRequest', `refusing to listen on ${host}: only loopback addresses and unix sockets`);
  }
  return address;
}
