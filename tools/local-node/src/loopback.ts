import { isIPv4 } from 'node:net';
import { NonLoopbackAddressError } from './errors.ts';

/** True for 127.0.0.0/8 literals and `localhost`: the only targets this agent ever dials. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  return isIPv4(host) && host.startsWith('127.');
}

export function assertLoopback(host: string, what: string): void {
  if (!isLoopback(host)) throw new NonLoopbackAddressError(`${what}: ${host} is not a loopback address; only 127.0.0.0/8 is ever dialled`);
}
