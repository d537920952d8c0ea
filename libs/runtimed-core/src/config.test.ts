import { DEFAULT_GATEWAY_HOST, DEFAULT_WORKSPACE_DIR, loadConfig } from './config.ts';
import { functionEndpoint } from './endpoint.ts';

const IDENTITY = {
  POD_NAME: 'python-7f587b4668-njcks',
  POD_NAMESPACE: 'demo',
  POD_UID: '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6',
  POD_IP: '10.1.2.3',
  RUNTIME_NAME: 'python',
  RUNTIME_LANGUAGE: 'python',
};

test('identity from the downward API and defaults for everything else', () => {
  expect(loadConfig(IDENTITY)).toEqual({
    pod: { name: IDENTITY.POD_NAME, namespace: 'demo', uid: IDENTITY.POD_UID, ip: '10.1.2.3' },
    runtime: 'python',
    language: 'python',
    capabilities: [],
    runtimeServerAddress: '127.0.0.1:7450',
    grpcPort: 7443,
    peerPort: 7444,
    healthPort: 7445,
    tlsDir: '/var/run/kruntimes/tls',
    metricsPort: 9464,
    workspaceDir: DEFAULT_WORKSPACE_DIR,
    gatewayHost: DEFAULT_GATEWAY_HOST,
    gatewayCaFile: undefined,
    leaseDurationSeconds: 90,
    leaseRenewSeconds: 20,
    cancelGraceSeconds: 10,
    drainSeconds: 300,
    runsPerPod: undefined,
    automaticRetry: true,
    artifactGrantsAddress: '127.0.0.1:0',
    logLevel: 'info',
    containerRoot: '',
  });
});

test.each([
  ['unset', undefined, []],
  ['checkpoint-v1', 'checkpoint-v1', ['checkpoint-v1']],
  ['spaces, repeats and empty items', ' checkpoint-v1 ,,checkpoint-v1', ['checkpoint-v1']],
  // A newer controller-manager may declare what this runtimed does not know: not offered, not fatal.
  ['an unknown one', 'teleport-v9,checkpoint-v1', ['checkpoint-v1']],
  ['only unknown ones', 'teleport-v9', []],
])('KRT_RUNTIME_CAPABILITIES %s', (_name, value, expected) => {
  const env = value === undefined ? IDENTITY : { ...IDENTITY, KRT_RUNTIME_CAPABILITIES: value };
  expect(loadConfig(env).capabilities).toEqual(expected);
});

test.each([
  [
    'missing identity',
    {},
    /POD_NAME is required.*POD_NAMESPACE is required.*POD_UID is required.*POD_IP is required.*RUNTIME_NAME is required/,
  ],
  ['bad language', { ...IDENTITY, RUNTIME_LANGUAGE: 'ruby' }, /RUNTIME_LANGUAGE="ruby" is not one of python, bash/],
  ['bad UID', { ...IDENTITY, POD_UID: 'x' }, /POD_UID="x" is not a Pod UID/],
  ['bad port', { ...IDENTITY, KRT_GRPC_PORT: '70000' }, /KRT_GRPC_PORT="70000" is not an integer/],
  [
    'drain window over its bound',
    { ...IDENTITY, KRT_DRAIN_SECONDS: '86401' },
    /KRT_DRAIN_SECONDS="86401" is not an integer in \[0, 86400\]/,
  ],
  ['bad peer port', { ...IDENTITY, KRT_PEER_PORT: '0' }, /KRT_PEER_PORT="0" is not an integer in \[1, 65535\]/],
  ['bad health port', { ...IDENTITY, KRT_HEALTH_PORT: 'x' }, /KRT_HEALTH_PORT="x" is not an integer/],
  ['two servers on one port', { ...IDENTITY, KRT_HEALTH_PORT: '7443' }, /KRT_HEALTH_PORT and KRT_GRPC_PORT are both 7443/],
  ['metrics on the peer port', { ...IDENTITY, KRT_METRICS_PORT: '7444' }, /KRT_METRICS_PORT and KRT_PEER_PORT are both 7444/],
  ['relative TLS dir', { ...IDENTITY, KRT_TLS_DIR: 'tls' }, /KRT_TLS_DIR="tls" is not an absolute path/],
  ['relative workspace', { ...IDENTITY, KRT_WORKSPACE_DIR: 'ws' }, /not an absolute path/],
  [
    'grants on a non-loopback address',
    { ...IDENTITY, KRT_ARTIFACT_GRANTS: '10.1.2.3:7446' },
    /KRT_ARTIFACT_GRANTS: refusing to listen on 10.1.2.3/,
  ],
  ['grants on no address', { ...IDENTITY, KRT_ARTIFACT_GRANTS: 'nowhere' }, /KRT_ARTIFACT_GRANTS: listen address "nowhere"/],
  ['a capacity of 0', { ...IDENTITY, KRT_RUNS_PER_POD: '0' }, /KRT_RUNS_PER_POD="0" is not an integer in \[1, 256\]/],
  ['a capacity that is no number', { ...IDENTITY, KRT_RUNS_PER_POD: 'two' }, /KRT_RUNS_PER_POD="two" is not an integer/],
  ['a retry switch that is not a boolean', { ...IDENTITY, KRT_AUTOMATIC_RETRY: 'no' }, /KRT_AUTOMATIC_RETRY="no" is not true or false/],
  ['renew not shorter than lease', { ...IDENTITY, KRT_LEASE_DURATION_SECONDS: '10', KRT_LEASE_RENEW_SECONDS: '10' }, /must be shorter/],
] as const)('refuses %s, naming every problem', (_name, env, message) => {
  expect(() => loadConfig(env)).toThrow(message);
});

test.each([
  ['unset: not checked', undefined, undefined],
  ['empty: not checked', '', undefined],
  ['one', '1', 1],
  ['the CRD maximum', '256', 256],
])('KRT_RUNS_PER_POD %s', (_name, value, expected) => {
  const env = value === undefined ? IDENTITY : { ...IDENTITY, KRT_RUNS_PER_POD: value };
  expect(loadConfig(env).runsPerPod).toBe(expected);
});

test.each([
  ['unset: allowed', undefined, true],
  ['empty: allowed', '', true],
  ['true', 'true', true],
  ['false', 'false', false],
])('KRT_AUTOMATIC_RETRY %s', (_name, value, expected) => {
  const env = value === undefined ? IDENTITY : { ...IDENTITY, KRT_AUTOMATIC_RETRY: value };
  expect(loadConfig(env).automaticRetry).toBe(expected);
});

test('ports and the TLS directory from the environment', () => {
  expect(
    loadConfig({
      ...IDENTITY,
      KRT_GRPC_PORT: '8443',
      KRT_PEER_PORT: '8444',
      KRT_HEALTH_PORT: '8445',
      KRT_TLS_DIR: '/etc/tls',
      KRT_METRICS_PORT: '0',
    }),
  ).toMatchObject({
    grpcPort: 8443,
    peerPort: 8444,
    healthPort: 8445,
    tlsDir: '/etc/tls',
    metricsPort: 0,
  });
});

test.each(['127.0.0.5:7446', '[::1]:0', 'unix:/run/kruntimes/grants.sock'])('ArtifactGrants may listen on %s', (address) => {
  expect(loadConfig({ ...IDENTITY, KRT_ARTIFACT_GRANTS: address }).artifactGrantsAddress).toBe(address);
});

test('function endpoint: the canonical gateway path with the Run UID; caBundle only when configured', () => {
  const target = { namespace: 'demo', runtime: 'python', runUID: IDENTITY.POD_UID };
  expect(functionEndpoint('gw.example:8443', target, undefined)).toEqual({
    protocol: 'HTTPS',
    url: `https://gw.example:8443/v1/namespaces/demo/runtimes/python/functions/${IDENTITY.POD_UID}:invoke`,
  });
  expect(functionEndpoint('gw', target, '-----BEGIN CERTIFICATE-----\n').caBundle).toBe(
    Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64'),
  );
});
