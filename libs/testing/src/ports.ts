import { createServer } from 'node:net';

/** The only address the harness ever binds or dials. */
export const LOOPBACK = '127.0.0.1';

/**
 * Asks the kernel for `count` distinct free TCP ports on loopback. The listeners are held
 * open until all ports are chosen so that one call never returns the same port twice;
 * another process may still take a port before the component binds it, which the control
 * plane handles by retrying its start.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, LOOPBACK, () => {
            resolve(server);
          });
        }),
    ),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('listener on loopback has no TCP address');
    return address.port;
  });
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve, reject) => {
          server.close((error) => {
            if (error === undefined) resolve();
            else reject(error);
          });
        }),
    ),
  );
  return ports;
}
