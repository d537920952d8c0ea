import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/** Where a proxy connects: a port on 127.0.0.1, or a host and port looked up per connection (undefined: refuse it). */
export type ProxyUpstream = number | (() => { host: string; port: number } | undefined);

/**
 * A TCP proxy on loopback in front of one upstream (the API server, a Runtime Server)
 * that can be told to stall: bytes stop moving in both directions on every connection,
 * open or new, without closing any of them. That is how a hung request looks to a client
 * (a network partition, a frozen load balancer), as opposed to a refused one. `drop`
 * then cuts every connection, losing what was held: a stream broken mid-flight. TLS
 * passes through untouched.
 */
export class StallingProxy {
  readonly #server: Server;
  readonly #upstream: ProxyUpstream;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  #stalled = false;
  /** Writes held back while stalled, in arrival order. */
  readonly #held: (() => void)[] = [];

  private constructor(server: Server, upstream: ProxyUpstream) {
    this.#server = server;
    this.#upstream = upstream;
    server.on('connection', (client) => {
      this.#pipe(client);
    });
  }

  /** Listens on 127.0.0.1 (an ephemeral port) in front of `127.0.0.1:upstream` (or what `upstream()` names). */
  static async start(upstream: ProxyUpstream): Promise<StallingProxy> {
    const server = createServer();
    const proxy = new StallingProxy(server, upstream);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy is not listening');
    return address.port;
  }

  /** A copy of `config` whose clusters are reached through this proxy (same CA, same user). */
  kubeConfig(config: KubeConfig): KubeConfig {
    const through = new KubeConfig();
    through.loadFromOptions({
      clusters: config.clusters.map((cluster) => ({ ...cluster, server: `https://127.0.0.1:${String(this.port)}` })),
      users: config.users,
      contexts: config.contexts,
      currentContext: config.currentContext,
    });
    return through;
  }

  /** From now on no byte moves, on open connections or new ones, until `resume`. */
  stall(): void {
    this.#stalled = true;
  }

  /** Delivers what was held, in order, and forwards again. */
  resume(): void {
    this.#stalled = false;
    for (const flush of this.#held.splice(0)) flush();
  }

  /**
   * Cuts every open connection (both sides see it closed) and drops what was held back;
   * new connections are forwarded again, unstalled.
   */
  drop(): void {
    this.#held.length = 0;
    this.#stalled = false;
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
  }

  /** Closes the listener and every connection. */
  async close(): Promise<void> {
    this.#held.length = 0;
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  #pipe(client: Socket): void {
    const target = typeof this.#upstream === 'number' ? { host: '127.0.0.1', port: this.#upstream } : this.#upstream();
    if (target === undefined) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream };
    this.#pairs.add(pair);
    this.#forward(client, upstream);
    this.#forward(upstream, client);
    const forget = (): void => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', forget).on('close', forget);
    upstream.on('error', forget).on('close', forget);
  }

  /** Like pipe(), except that while stalled each chunk is held instead of written. */
  #forward(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      const write = (): void => {
        if (!to.destroyed) to.write(chunk);
      };
      if (this.#stalled) this.#held.push(write);
      else write();
    });
    from.on('end', () => {
      const end = (): void => {
        to.end();
      };
      if (this.#stalled) this.#held.push(end);
      else end();
    });
  }
}
