import { X509Certificate, createPrivateKey } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type TLSSocket } from 'node:tls';
import {
  CLOCK_SKEW_MS,
  createCertificateAuthority,
  identityOfCertificate,
  issueWorkloadCertificate,
  keyMatchesCertificate,
  needsRenewal,
  renewalTime,
  validateCertificateAuthority,
  runtimeIdentity,
  type CertificateAuthority,
} from './workload-pki.ts';
import { loadX509 } from './x509.ts';

const DAY = 86_400_000;
const NOW = new Date('2026-06-01T00:00:00Z');

let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
beforeAll(async () => {
  [ca, otherCa] = await Promise.all([createCertificateAuthority({ now: NOW }), createCertificateAuthority({ now: NOW })]);
});

describe('createCertificateAuthority', () => {
  it('is a self-signed P-256 CA for 10 years that may sign certificates', () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.checkIssued(cert)).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.validToDate.getTime() - NOW.getTime()).toBe(3650 * DAY);
    expect(cert.checkPrivateKey(createPrivateKey(ca.keyPem))).toBe(true);
  });

  it('takes a validity', async () => {
    const short = await createCertificateAuthority({ now: NOW, validityDays: 1, commonName: 'test CA' });
    const cert = new X509Certificate(short.certPem);
    expect(cert.subject).toContain('CN=test CA');
    expect(cert.validToDate.getTime() - NOW.getTime()).toBe(DAY);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses validityDays %p', async (validityDays) => {
    await expect(createCertificateAuthority({ validityDays })).rejects.toThrow(RangeError);
  });
});

describe('runtimeIdentity', () => {
  it.each([
    ['team-a', 'python', 'spiffe://kruntimes.io/ns/team-a/runtime/python'],
    ['ns1', 'r-2', 'spiffe://kruntimes.io/ns/ns1/runtime/r-2'],
  ])('%s/%s -> %s', (ns, runtime, uri) => {
    expect(runtimeIdentity(ns, runtime)).toBe(uri);
  });

  it.each([
    ['', 'python'],
    ['Team', 'python'],
    ['ns', 'a/b'],
    ['ns', '-x'],
    ['ns', 'x'.repeat(64)],
  ])('refuses %p/%p', (ns, runtime) => {
    expect(() => runtimeIdentity(ns, runtime)).toThrow(TypeError);
  });
});

describe('issueWorkloadCertificate', () => {
  it('issues the contract certificate: SANs, identity, EKU, 30 days from a few minutes ago, chained to the CA', async () => {
    const issued = await issueWorkloadCertificate(ca, { namespace: 'team-a', runtime: 'python', now: NOW });
    const cert = new X509Certificate(issued.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.subjectAltName?.split(', ').sort()).toEqual([
      'DNS:python.team-a.svc',
      'DNS:python.team-a.svc.cluster.local',
      'URI:spiffe://kruntimes.io/ns/team-a/runtime/python',
    ]);
    expect([...cert.keyUsage].sort()).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    expect(cert.checkHost('python.team-a.svc')).toBe('python.team-a.svc');
    expect(cert.checkHost('python.team-b.svc')).toBeUndefined();
    expect(cert.validFromDate.getTime()).toBe(NOW.getTime() - CLOCK_SKEW_MS);
    expect(cert.validToDate.getTime()).toBe(NOW.getTime() + 30 * DAY);
    expect(issued.notBefore).toEqual(cert.validFromDate);
    expect(issued.notAfter).toEqual(cert.validToDate);
    expect(issued.caPem).toBe(ca.certPem);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.checkPrivateKey(createPrivateKey(issued.keyPem))).toBe(true);
  });

  it('gives every certificate its own key and serial', async () => {
    const [a, b] = await Promise.all([
      issueWorkloadCertificate(ca, { namespace: 'n', runtime: 'r' }),
      issueWorkloadCertificate(ca, { namespace: 'n', runtime: 'r' }),
    ]);
    expect(a.keyPem).not.toBe(b.keyPem);
    expect(new X509Certificate(a.certPem).serialNumber).not.toBe(new X509Certificate(b.certPem).serialNumber);
  });

  it.each([
    [{ namespace: 'Bad', runtime: 'r' }, TypeError],
    [{ namespace: 'n', runtime: 'r', validityDays: 0 }, RangeError],
  ])('refuses %p', async (request, error) => {
    await expect(issueWorkloadCertificate(ca, request)).rejects.toThrow(error);
  });

  it.each([
    ['a certificate that is not PEM', { certPem: 'nope', keyPem: '' }],
    ['a key that is not PEM', { certPem: '', keyPem: 'nope' }],
  ])('refuses a CA with %s', async (_what, broken) => {
    await expect(issueWorkloadCertificate({ ...ca, ...broken }, { namespace: 'n', runtime: 'r' })).rejects.toThrow(TypeError);
  });
});

describe('identityOfCertificate', () => {
  it('reads the spiffe URI of a workload certificate', async () => {
    const issued = await issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'bash' });
    expect(identityOfCertificate(issued.certPem)).toBe('spiffe://kruntimes.io/ns/ns/runtime/bash');
  });

  it('reads SANs in order: a quoted URI with a comma is one entry, and a `, URI:` inside another entry is no URI', async () => {
    const x509 = await loadX509();
    const selfSigned = async (names: { type: 'dns' | 'url'; value: string }[]): Promise<string> => {
      const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
      const cert = await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: '01',
        name: 'CN=san-test',
        notBefore: NOW,
        notAfter: new Date(NOW.getTime() + DAY),
        keys,
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
        extensions: [new x509.SubjectAlternativeNameExtension(names)],
      });
      return cert.toString('pem');
    };
    const spoof = { type: 'dns' as const, value: 'a, URI:spiffe://kruntimes.io/ns/x/runtime/evil' };
    const real = await selfSigned([
      spoof,
      { type: 'url', value: 'https://example.com/a,b' },
      { type: 'url', value: runtimeIdentity('ns', 'real') },
    ]);
    expect(new X509Certificate(real).subjectAltName).toContain('"');
    expect(identityOfCertificate(real)).toBe(runtimeIdentity('ns', 'real'));
    expect(identityOfCertificate(await selfSigned([spoof]))).toBeUndefined();
  });

  it.each([
    ['a CA certificate (no URI SAN)', () => ca.certPem],
    ['garbage', () => 'not a certificate'],
    ['an empty string', () => ''],
  ])('is undefined for %s', (_what, pem) => {
    expect(identityOfCertificate(pem())).toBeUndefined();
  });
});

describe('needsRenewal', () => {
  // 30 days from NOW - 5 min: the renewal point is at two thirds of that span.
  const renewAt = NOW.getTime() - CLOCK_SKEW_MS + (2 / 3) * (30 * DAY + CLOCK_SKEW_MS);
  let pem: string;
  beforeAll(async () => {
    pem = (await issueWorkloadCertificate(ca, { namespace: 'n', runtime: 'r', now: NOW })).certPem;
  });

  it.each([
    ['fresh', () => pem, () => ca.certPem, NOW.getTime(), false],
    ['just before the renewal point', () => pem, () => ca.certPem, renewAt - 1000, false],
    ['at the renewal point', () => pem, () => ca.certPem, renewAt + 1, true],
    ['expired', () => pem, () => ca.certPem, NOW.getTime() + 31 * DAY, true],
    ['not yet valid', () => pem, () => ca.certPem, NOW.getTime() - DAY, true],
    ['signed by another CA', () => pem, () => otherCa.certPem, NOW.getTime(), true],
    ['unparsable certificate', () => 'garbage', () => ca.certPem, NOW.getTime(), true],
    ['unparsable CA', () => pem, () => '', NOW.getTime(), true],
  ])('%s -> %s', (_what, cert, caPem, at, expected) => {
    expect(needsRenewal(cert(), caPem(), new Date(at))).toBe(expected);
  });

  it('renewalTime is the point where a third of the validity is left', () => {
    expect(Math.abs((renewalTime(pem)?.getTime() ?? 0) - renewAt)).toBeLessThan(1000);
    expect(renewalTime('garbage')).toBeUndefined();
  });
});

describe('keyMatchesCertificate', () => {
  it.each([
    ['the key of the certificate', () => ca.certPem, () => ca.keyPem, true],
    ['another key', () => ca.certPem, () => otherCa.keyPem, false],
    ['garbage key', () => ca.certPem, () => 'nope', false],
    ['garbage certificate', () => 'nope', () => ca.keyPem, false],
  ])('%s -> %s', (_what, cert, key, expected) => {
    expect(keyMatchesCertificate(cert(), key())).toBe(expected);
  });
});

describe('validateCertificateAuthority', () => {
  it('accepts a CA made by createCertificateAuthority', () => {
    expect(() => {
      validateCertificateAuthority(ca, NOW);
    }).not.toThrow();
  });

  it.each([
    ['a garbage certificate', () => ({ ...ca, certPem: 'nope' }), NOW, /not a PEM/],
    ['a leaf certificate', () => leaf, NOW, /not a CA certificate/],
    ['the key of another CA', () => ({ ...ca, keyPem: otherCa.keyPem }), NOW, /not the private key/],
    ['an expired CA', () => ca, new Date(NOW.getTime() + 3651 * DAY), /not now/],
  ])('refuses %s', (_what, broken, at, message) => {
    expect(() => {
      validateCertificateAuthority(broken(), at);
    }).toThrow(message);
  });

  let leaf: CertificateAuthority;
  beforeAll(async () => {
    const issued = await issueWorkloadCertificate(ca, { namespace: 'n', runtime: 'r', now: NOW });
    leaf = { certPem: issued.certPem, keyPem: issued.keyPem };
  });
});

describe('TLS with issued certificates', () => {
  it('a server and a client of the same Runtime handshake with mutual auth and see each other’s identity', async () => {
    const [server, client, stranger] = await Promise.all([
      issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'python' }),
      issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'python' }),
      issueWorkloadCertificate(otherCa, { namespace: 'ns', runtime: 'python' }),
    ]);
    let accepted = 0;
    const tlsServer = createServer(
      { cert: server.certPem, key: server.keyPem, ca: server.caPem, requestCert: true, rejectUnauthorized: true },
      (socket) => {
        accepted += 1;
        socket.end(identityOfCertificate(socket.getPeerX509Certificate()?.toString() ?? '') ?? 'none');
      },
    );
    tlsServer.listen(0, '127.0.0.1');
    await once(tlsServer, 'listening');
    const address = tlsServer.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    try {
      const dial = (cert: string, key: string): TLSSocket =>
        connect({
          host: '127.0.0.1',
          port: address.port,
          servername: 'python.ns.svc',
          ca: ca.certPem,
          cert,
          key,
        });

      const good = dial(client.certPem, client.keyPem);
      await once(good, 'secureConnect');
      expect(good.authorized).toBe(true);
      expect(identityOfCertificate(good.getPeerX509Certificate()?.toString() ?? '')).toBe(runtimeIdentity('ns', 'python'));
      let answer = '';
      for await (const chunk of good) answer += String(chunk);
      expect(answer).toBe(runtimeIdentity('ns', 'python'));

      expect(accepted).toBe(1);

      // A client certificate from another CA is refused by the server: Node destroys the
      // connection after the handshake (reported as a client error) before the handler runs.
      const refused = once(tlsServer, 'tlsClientError');
      const bad = dial(stranger.certPem, stranger.keyPem);
      bad.on('error', () => undefined); // how the client learns it is asserted on the server side
      await refused;
      bad.destroy();
      expect(accepted).toBe(1);

      // A client that trusts another CA refuses the server.
      const distrustful = connect({ host: '127.0.0.1', port: address.port, servername: 'python.ns.svc', ca: otherCa.certPem });
      const [clientError] = (await once(distrustful, 'error')) as [Error];
      distrustful.destroy();
      expect(clientError.message).toMatch(/certificate/i);
    } finally {
      tlsServer.close();
    }
  });
});
