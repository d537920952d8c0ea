import { KubeConfig } from '@kubernetes/client-node';

type RequestContext = Parameters<KubeConfig['applySecurityAuthentication']>[0];
type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/** Pooled connections are renewed this often, so that TLS files rotated on disk are read again. */
export const CONNECTION_POOL_RENEW_MS = 5 * 60 * 1000;

/**
 * A KubeConfig whose API clients share one connection pool. client-node (2.x) builds a
 * new undici Agent for every API request, so every request pays a TCP connect and a
 * full TLS handshake on both sides, and the API server holds an idle connection per
 * request for seconds after. This one keeps the first Agent built for the current
 * cluster, user and TLS material (its keep-alive connections are reused) and closes the
 * fresh one each request built. Nothing else changes: authentication headers (tokens,
 * exec plugins) are still applied per request by client-node.
 */
export class PooledKubeConfig extends KubeConfig {
  #pool: { key: string; dispatcher: Dispatcher } | undefined;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    super();
    this.#now = now;
  }

  /** A pooled copy of `kubeConfig` (its clusters, users, contexts and current context); itself when pooled already. */
  static from(kubeConfig: KubeConfig): PooledKubeConfig {
    if (kubeConfig instanceof PooledKubeConfig) return kubeConfig;
    return PooledKubeConfig.separate(kubeConfig);
  }

  /** A pooled copy of `kubeConfig` with connections of its own, even when `kubeConfig` is pooled. */
  static separate(kubeConfig: KubeConfig): PooledKubeConfig {
    const pooled = new PooledKubeConfig();
    pooled.loadFromOptions({
      clusters: kubeConfig.getClusters(),
      users: kubeConfig.getUsers(),
      contexts: kubeConfig.getContexts(),
      currentContext: kubeConfig.getCurrentContext(),
    });
    return pooled;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (fresh === undefined) return;
    const key = this.connectionKey();
    const pooled = this.#pool;
    if (pooled?.key === key) {
      context.setDispatcher(pooled.dispatcher);
      // Never connected: closing it is immediate.
      void fresh.close().catch(() => undefined);
      return;
    }
    this.#pool = { key, dispatcher: fresh };
    // Lets requests in flight on the old pool finish, then closes its connections.
    if (pooled !== undefined) void pooled.dispatcher.close().catch(() => undefined);
  }

  /** What the connections depend on: the current cluster, user, their TLS material and the renewal period. */
  connectionKey(): string {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    return JSON.stringify([
      cluster?.name,
      cluster?.server,
      cluster?.caData,
      cluster?.caFile,
      cluster?.skipTLSVerify,
      cluster?.tlsServerName,
      cluster?.proxyUrl,
      user?.name,
      user?.certData,
      user?.certFile,
      user?.keyData,
      user?.keyFile,
      Math.floor(this.#now() / CONNECTION_POOL_RENEW_MS),
    ]);
  }
}

/** A service's `--kubeconfig`: that file, or when undefined KUBECONFIG, then in-cluster; pooled. */
export function loadKubeConfig(path: string | undefined): PooledKubeConfig {
  const kubeConfig = new PooledKubeConfig();
  if (path === undefined) kubeConfig.loadFromDefault();
  else kubeConfig.loadFromFile(path);
  return kubeConfig;
}
