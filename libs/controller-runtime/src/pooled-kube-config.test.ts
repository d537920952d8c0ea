import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { CONNECTION_POOL_RENEW_MS, PooledKubeConfig } from './pooled-kube-config.ts';

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');

function load<T extends KubeConfig>(config: T, user = 'alice'): T {
  config.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: CA, skipTLSVerify: false }],
    users: [
      { name: 'alice', token: 'a' },
      { name: 'bob', token: 'b' },
    ],
    contexts: [
      { name: 'alice', cluster: 'c', user: 'alice' },
      { name: 'bob', cluster: 'c', user: 'bob' },
    ],
    currentContext: user,
  });
  return config;
}

async function dispatcherOf(config: KubeConfig): Promise<unknown> {
  const context = new RequestContext('https://127.0.0.1:6443/api', HttpMethod.GET);
  await config.applySecurityAuthentication(context);
  expect(context.getHeaders().Authorization).toMatch(/^Bearer /);
  return context.getDispatcher();
}

describe('PooledKubeConfig', () => {
  test('client-node alone builds a new connection pool for every request (what this class is for)', async () => {
    const plain = load(new KubeConfig());
    expect(await dispatcherOf(plain)).not.toBe(await dispatcherOf(plain));
  });

  test('every request of one cluster and user shares one pool', async () => {
    const pooled = load(new PooledKubeConfig());
    const first = await dispatcherOf(pooled);
    expect(first).toBeDefined();
    expect(await dispatcherOf(pooled)).toBe(first);
    expect(await dispatcherOf(pooled)).toBe(first);
  });

  test('another user (context) gets its own pool', async () => {
    const pooled = load(new PooledKubeConfig());
    const alice = await dispatcherOf(pooled);
    pooled.setCurrentContext('bob');
    const bob = await dispatcherOf(pooled);
    expect(bob).not.toBe(alice);
    expect(await dispatcherOf(pooled)).toBe(bob);
  });

  test('the pool is renewed after CONNECTION_POOL_RENEW_MS (TLS files rotated on disk are read again)', async () => {
    let now = 0;
    const pooled = load(new PooledKubeConfig(() => now));
    const first = await dispatcherOf(pooled);
    now = CONNECTION_POOL_RENEW_MS - 1;
    expect(await dispatcherOf(pooled)).toBe(first);
    now = CONNECTION_POOL_RENEW_MS;
    expect(await dispatcherOf(pooled)).not.toBe(first);
  });

  test('from() copies clusters, users, contexts and the current context; a pooled config is kept as is', () => {
    const plain = load(new KubeConfig(), 'bob');
    const pooled = PooledKubeConfig.from(plain);
    expect(pooled).toBeInstanceOf(PooledKubeConfig);
    expect(pooled.getCurrentUser()?.name).toBe('bob');
    expect(pooled.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(PooledKubeConfig.from(pooled)).toBe(pooled);
  });

  test("separate() has connections of its own (the leader elector's), beside the pooled config it copies", async () => {
    const shared = load(new PooledKubeConfig());
    const separate = PooledKubeConfig.separate(shared);
    expect(separate).not.toBe(shared);
    expect(separate.getCurrentUser()?.name).toBe('alice');
    const own = await dispatcherOf(separate);
    expect(own).not.toBe(await dispatcherOf(shared));
    expect(await dispatcherOf(separate)).toBe(own);
  });
});
