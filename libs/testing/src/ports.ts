import { randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server } from 'node:net';

/** The only address the harness ever binds or dials. */
export const LOOPBACK = '127.0.0.1';

/** Where Linux says which ports it hands out as source ports of outgoing connections (and for binds of port 0). */
export const EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range';
/** Below it, binding needs privileges. */
const FIRST_UNPRIVILEGED_PORT = 1024;
const LAST_PORT = 65_535;
/** Bind tests per port asked for: a range with room finds one in a few; a full one fails fast. */
const ATTEMPTS_PER_PORT = 50;
const PICK_TIMEOUT_MS = 10_000;
/** How many handed-out ports this process remembers (and never hands out again). */
const REMEMBERED_PORTS = 10_000;

/** An inclusive range of TCP ports. */
export interface PortRange {
  first: number;
  last: number;
}

const handedOut = new Set<number>();

/** `ip_local_port_range`'s text ("32768\t60999\n") as a range; throws on anything else. */
export function parsePortRange(text: string): PortRange {
  const match = /^\s*(\d+)\s+(\d+)\s*$/.exec(text);
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (match === null || first < 1 || last > LAST_PORT || first > last)
    throw new Error(`not a port range: ${JSON.stringify(text)} (expected "FIRST LAST", as in ${EPHEMERAL_RANGE_FILE})`);
  return { first, last };
}

/** The unprivileged ports outside the ephemeral range (below it, then above it): no outgoing connection takes one as its source port. */
export function listenerPortRanges(ephemeral: PortRange): PortRange[] {
  const below = { first: FIRST_UNPRIVILEGED_PORT, last: Math.min(ephemeral.first - 1, LAST_PORT) };
  const above = { first: Math.max(ephemeral.last + 1, FIRST_UNPRIVILEGED_PORT), last: LAST_PORT };
  return [below, above].filter((range) => range.first <= range.last);
}

/** The `index`-th port of `ranges` taken together. */
export function portAt(ranges: readonly PortRange[], index: number): number {
  let rest = index;
  for (const range of ranges) {
    const size = range.last - range.first + 1;
    if (rest < size) return range.first + rest;
    rest -= size;
  }
  throw new RangeError(`port index ${String(index)} is beyond the ranges`);
}

async function ephemeralRange(): Promise<PortRange> {
  let text: string;
  try {
    text = await readFile(EPHEMERAL_RANGE_FILE, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${EPHEMERAL_RANGE_FILE} (the harness chooses listener ports outside it; Linux only)`, { cause: error });
  }
  return parsePortRange(text);
}

/** A listener on LOOPBACK:port, or undefined when the port is taken (or not ours to bind). */
function tryListen(port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve(undefined);
      else reject(error);
    });
    server.listen(port, LOOPBACK, () => {
      resolve(server);
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => {
      if (error === undefined) resolve();
      else reject(error);
    });
  });
}

function remember(port: number): void {
  handedOut.add(port);
  // The oldest first (a Set keeps insertion order): a long benchmark cannot exhaust the ranges.
  for (const old of handedOut) {
    if (handedOut.size <= REMEMBERED_PORTS) break;
    handedOut.delete(old);
  }
}

/**
 * `count` distinct TCP ports for listeners on loopback, for a component that is given its
 * ports on its command line. What it guarantees:
 * - each port is outside the kernel's ephemeral range (read from `ip_local_port_range`),
 *   so no outgoing connection on this machine takes it as its source port, however long
 *   the component starts after the call (a port-0 bind would come from that very range);
 * - each port was bound on 127.0.0.1 by this call (a bind test), so no listener held it then;
 * - this process never hands out the same port twice (of the last 10,000).
 * What it cannot guarantee: that another process does not bind the port on purpose before
 * the component does (another harness choosing from the same ranges, say). A component
 * whose bind then fails with EADDRINUSE starts again on new ports, a bounded number of
 * times (ControlPlane, ObjectStore and Jaeger do), or refuses saying which port was taken.
 * Bounded: at most 50 bind tests per port and 10 s in all.
 */
export async function freePorts(count: number): Promise<number[]> {
  const ranges = listenerPortRanges(await ephemeralRange());
  const size = ranges.reduce((sum, range) => sum + range.last - range.first + 1, 0);
  if (size === 0) throw new Error(`no unprivileged port outside the ephemeral range ${EPHEMERAL_RANGE_FILE} names`);
  const held: Server[] = [];
  const ports: number[] = [];
  const deadline = performance.now() + PICK_TIMEOUT_MS;
  try {
    // The listeners are held until all are chosen: one call never returns a port twice.
    for (let attempt = 0; ports.length < count && attempt < count * ATTEMPTS_PER_PORT && performance.now() < deadline; attempt++) {
      const port = portAt(ranges, randomInt(size));
      if (handedOut.has(port) || ports.includes(port)) continue;
      const server = await tryListen(port);
      if (server === undefined) continue;
      held.push(server);
      ports.push(port);
    }
  } finally {
    await Promise.all(held.map(close));
  }
  if (ports.length < count)
    throw new Error(`found ${String(ports.length)} of ${String(count)} free ports outside the ephemeral range in bounded tries`);
  for (const port of ports) remember(port);
  return ports;
}

/** Whether nothing listens on LOOPBACK:port now (a bind test): a port chosen a while ago, checked just before its listener starts. */
export async function portFree(port: number): Promise<boolean> {
  const server = await tryListen(port);
  if (server === undefined) return false;
  await close(server);
  return true;
}
