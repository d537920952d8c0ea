import { UsageError, gatewayConfig, parseGatewayFlags } from './config.ts';

const TLS = ['--tls-cert-file', '/tls/tls.crt', '--tls-key-file', '/tls/tls.key', '--runtimed-ca-file', '/ca/ca.crt'];
const config = (...argv: string[]) => gatewayConfig(parseGatewayFlags([...TLS, ...argv]));

describe('parseGatewayFlags', () => {
  it.each([
    [['--bogus'], "Unknown option '--bogus'"],
    [['--listen'], "Option '--listen <value>' argument missing"],
    [['extra'], "Unexpected argument 'extra'. This command does not take positional arguments"],
  ])('%j is a usage error: %s', (argv, message) => {
    expect(() => parseGatewayFlags(argv)).toThrow(UsageError);
    expect(() => parseGatewayFlags(argv)).toThrow(message);
  });
});

describe('gatewayConfig', () => {
  it('has the defaults of the flags', () => {
    expect(config()).toEqual({
      listen: { host: '0.0.0.0', port: 8443 },
      tlsCertFile: '/tls/tls.crt',
      tlsKeyFile: '/tls/tls.key',
      runtimedCaFile: '/ca/ca.crt',
      resolve: 'dns',
      namespace: undefined,
      kubeconfig: undefined,
      metricsAddress: undefined,
      shutdownDelaySeconds: 5,
      drainSeconds: 30,
    });
  });

  it.each<[string[], Partial<ReturnType<typeof config>>]>([
    [['--listen', '127.0.0.1:0'], { listen: { host: '127.0.0.1', port: 0 } }],
    [['--listen', ':9443'], { listen: { host: '0.0.0.0', port: 9443 } }],
    [['--listen', '[::1]:8443'], { listen: { host: '::1', port: 8443 } }],
    [['--metrics-address', ':9090'], { metricsAddress: { host: '0.0.0.0', port: 9090 } }],
    [
      ['--resolve', 'endpoints', '--namespace', 'demo', '--kubeconfig', '/k'],
      { resolve: 'endpoints', namespace: 'demo', kubeconfig: '/k' },
    ],
    [['--resolve', 'endpointslices'], { resolve: 'endpointslices' }],
    [['--shutdown-delay-seconds', '0', '--drain-seconds', '2.5'], { shutdownDelaySeconds: 0, drainSeconds: 2.5 }],
  ])('%j', (argv, expected) => {
    expect(config(...argv)).toMatchObject(expected);
  });

  it.each([
    [['--listen', 'localhost'], '--listen must be HOST:PORT, not "localhost"'],
    [['--listen', '127.0.0.1:70000'], '--listen must be HOST:PORT, not "127.0.0.1:70000"'],
    [['--resolve', 'consul'], '--resolve must be endpointslices, dns or endpoints, not "consul"'],
    [['--drain-seconds', 'soon'], '--drain-seconds must be a number of seconds'],
    [['--shutdown-delay-seconds=-1'], '--shutdown-delay-seconds must be a number of seconds'],
    [['--metrics-address', 'x'], '--metrics-address must be HOST:PORT, not "x"'],
    // The listener is checked before the certificate files.
    [['--listen', 'x', '--tls-cert-file', ''], '--listen must be HOST:PORT, not "x"'],
  ])('refuses %j: %s', (argv, message) => {
    expect(() => config(...argv)).toThrow(message);
  });

  it.each(['tls-cert-file', 'tls-key-file', 'runtimed-ca-file'])('--%s is required', (flag) => {
    const argv = [...TLS];
    argv.splice(argv.indexOf(`--${flag}`), 2);
    expect(() => gatewayConfig(parseGatewayFlags(argv))).toThrow(`--${flag} is required`);
  });
});
