import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { validateGatewayCaPem, validateGatewayHost } from './gateway-endpoint.ts';

let first: CertificateAuthority;
let second: CertificateAuthority;

beforeAll(async () => {
  [first, second] = await Promise.all([createCertificateAuthority(), createCertificateAuthority()]);
});

describe('validateGatewayHost', () => {
  it.each(['runtime-gateway.kruntimes.svc', 'runtime-gateway.kruntimes.svc:8443', '127.0.0.1:9443', 'gw'])('accepts %s', (host) => {
    expect(validateGatewayHost(host)).toBe(host);
  });

  it.each(['', 'https://gw.example.com', 'GW.example.com', 'gw:0', 'gw:70000', 'gw:', '-gw', 'gw/path', '[::1]:443'])(
    'refuses %j with the flag in the message',
    (host) => {
      expect(() => validateGatewayHost(host)).toThrow(/^--gateway-host .* is not HOST or HOST:PORT/);
    },
  );
});

describe('validateGatewayCaPem', () => {
  it('accepts one certificate and a bundle, unchanged', () => {
    expect(validateGatewayCaPem(first.certPem, 'ca.crt')).toBe(first.certPem);
    const bundle = `${first.certPem}${second.certPem}`;
    expect(validateGatewayCaPem(bundle, 'ca.crt')).toBe(bundle);
  });

  it.each<[string, () => string, RegExp]>([
    ['an empty file', () => '', /^f: no PEM certificate in it$/],
    ['text', () => 'not a certificate\n', /no PEM certificate/],
    ['a private key beside the certificate', () => `${first.certPem}${first.keyPem}`, /PEM block 2 is a PRIVATE KEY, not a CERTIFICATE/],
    [
      'a broken certificate',
      () => '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      /PEM block 1 is not an X\.509 certificate/,
    ],
  ])('refuses %s', (_what, pem, message) => {
    expect(() => validateGatewayCaPem(pem(), 'f')).toThrow(message);
  });
});
