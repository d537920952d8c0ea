import { X509Certificate as NodeX509Certificate, createPrivateKey, type webcrypto } from 'node:crypto';
import { loadX509, type X509 } from './x509.ts';

type Crypto = webcrypto.Crypto;
type CryptoKey = webcrypto.CryptoKey;

/** The internal CA: PEM certificate and PKCS#8 private key (ECDSA P-256), as in `ca.crt`/`ca.key`. */
export interface CertificateAuthority {
  readonly certPem: string;
  readonly keyPem: string;
}

/** A leaf certificate with its key and the CA that issued it (the Secret's tls.crt, tls.key, ca.crt). */
export interface WorkloadCertificate {
  readonly certPem: string;
  readonly keyPem: string;
  readonly caPem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

export interface CertificateAuthorityOptions {
  /** Subject common name; default `kruntimes internal CA`. */
  readonly commonName?: string;
  /** Default 3650 (10 years). */
  readonly validityDays?: number;
  /** Issue time; default the current time. */
  readonly now?: Date;
}

export interface WorkloadCertificateRequest {
  readonly namespace: string;
  readonly runtime: string;
  /** Default 30. Fractions are allowed (tests issue short-lived certificates). */
  readonly validityDays?: number;
  /** Issue time; default the current time. notBefore is this minus CLOCK_SKEW_MS. */
  readonly now?: Date;
}

export const TRUST_DOMAIN = 'kruntimes.io';
export const DEFAULT_CA_VALIDITY_DAYS = 3650;
export const DEFAULT_WORKLOAD_VALIDITY_DAYS = 30;
/** notBefore lies this far before the issue time, so peers whose clock is a bit behind accept it. */
export const CLOCK_SKEW_MS = 5 * 60_000;

const DAY_MS = 86_400_000;
const EC_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
// RFC 1123 label: what Kubernetes accepts for namespaces and for names used in DNS.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function webCrypto(): Crypto {
  return globalThis.crypto;
}

/** The SPIFFE ID of one Runtime's runtimed Pods: the identity peers compare on mTLS. */
export function runtimeIdentity(namespace: string, runtime: string): string {
  requireLabel('namespace', namespace);
  requireLabel('runtime', runtime);
  return `spiffe://${TRUST_DOMAIN}/ns/${namespace}/runtime/${runtime}`;
}

/** The DNS names in a Runtime's certificate: the Service name the gateway verifies, short and long. */
export function runtimeDnsNames(namespace: string, runtime: string): readonly string[] {
  requireLabel('namespace', namespace);
  requireLabel('runtime', runtime);
  return [`${runtime}.${namespace}.svc`, `${runtime}.${namespace}.svc.cluster.local`];
}

/** A self-signed CA that may only issue leaf certificates (pathLen 0). */
export async function createCertificateAuthority(options: CertificateAuthorityOptions = {}): Promise<CertificateAuthority> {
  const x509 = await loadX509();
  const crypto = webCrypto();
  const now = options.now ?? new Date();
  const validityDays = options.validityDays ?? DEFAULT_CA_VALIDITY_DAYS;
  requireValidity(validityDays);
  const keys = await crypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify']);
  const name = [{ CN: [options.commonName ?? 'kruntimes internal CA'] }, { O: ['kruntimes'] }];
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerial(crypto),
      name,
      notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
      notAfter: new Date(now.getTime() + validityDays * DAY_MS),
      keys,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem') + '\n', keyPem: await exportKeyPem(x509, crypto, keys.privateKey) };
}

/**
 * The certificate of one Runtime's runtimed: server and client auth, DNS names of its Service,
 * its SPIFFE identity as URI SAN, signed by the CA.
 */
export async function issueWorkloadCertificate(
  ca: CertificateAuthority,
  request: WorkloadCertificateRequest,
): Promise<WorkloadCertificate> {
  const x509 = await loadX509();
  const crypto = webCrypto();
  const { namespace, runtime } = request;
  const identity = runtimeIdentity(namespace, runtime);
  const dnsNames = runtimeDnsNames(namespace, runtime);
  const validityDays = request.validityDays ?? DEFAULT_WORKLOAD_VALIDITY_DAYS;
  requireValidity(validityDays);
  const now = request.now ?? new Date();
  const notBefore = new Date(now.getTime() - CLOCK_SKEW_MS);
  const notAfter = new Date(now.getTime() + validityDays * DAY_MS);

  const caCert = parseCertificate(x509, ca.certPem, 'CA certificate');
  const caKey = await importKeyPem(x509, crypto, ca.keyPem);
  const keys = await crypto.subtle.generateKey(EC_KEY, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerial(crypto),
      subject: [{ CN: [dnsNames[0] ?? runtime] }, { O: ['kruntimes'] }],
      issuer: caCert.subjectName,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: SIGNING,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([SERVER_AUTH, CLIENT_AUTH], false),
        new x509.SubjectAlternativeNameExtension(
          [...dnsNames.map((value) => ({ type: 'dns' as const, value })), { type: 'url', value: identity }],
          false,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return {
    certPem: cert.toString('pem') + '\n',
    keyPem: await exportKeyPem(x509, crypto, keys.privateKey),
    caPem: ca.certPem,
    notBefore,
    notAfter,
  };
}

/**
 * The SPIFFE URI SAN of a certificate (the first `spiffe://` URI), or undefined (none, or not
 * a certificate). Read with node:crypto: Node lists the SANs as `TYPE:value` joined by `, `,
 * a value with a comma, quote or other special character JSON-quoted (a SPIFFE ID never is).
 */
export function identityOfCertificate(certPem: string): string | undefined {
  const names = tryNodeCertificate(certPem)?.subjectAltName;
  if (names === undefined) return undefined;
  return subjectAltNames(names).find((name) => name.type === 'URI' && name.value.startsWith('spiffe://'))?.value;
}

/**
 * Node's subjectAltName string as its entries, read left to right so that a `, URI:` inside a
 * quoted value of another entry is never taken for an entry of its own. Empty when the string
 * is not in Node's form.
 */
function subjectAltNames(text: string): { type: string; value: string }[] {
  const entries: { type: string; value: string }[] = [];
  const entry = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,"]*)(, |$)/y;
  while (entry.lastIndex < text.length) {
    const match = entry.exec(text);
    if (match === null) return [];
    const [, type = '', raw = '', separator] = match;
    const value = raw.startsWith('"') ? unquote(raw) : raw;
    if (value === undefined) return [];
    entries.push({ type, value });
    if (separator === '') break;
  }
  return entries;
}

function unquote(quoted: string): string | undefined {
  try {
    const value: unknown = JSON.parse(quoted);
    return typeof value === 'string' ? value : undefined;
  } catch {
    // Not what Node writes: no identity rather than a guess.
    return undefined;
  }
}

/**
 * When a certificate should be replaced: once less than a third of its validity is left.
 * Undefined when the PEM is not a certificate.
 */
export function renewalTime(certPem: string): Date | undefined {
  const cert = tryNodeCertificate(certPem);
  if (cert === undefined) return undefined;
  const from = cert.validFromDate.getTime();
  const to = cert.validToDate.getTime();
  return new Date(to - (to - from) / 3);
}

/**
 * Whether a workload certificate must be reissued at `now`: less than a third of its validity is
 * left (or it is expired or not yet valid), it was not signed by the CA `caPem` (the CA changed),
 * or either PEM does not parse.
 */
export function needsRenewal(certPem: string, caPem: string, now: Date): boolean {
  const cert = tryNodeCertificate(certPem);
  const ca = tryNodeCertificate(caPem);
  if (cert === undefined || ca === undefined) return true;
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return true;
  const t = now.getTime();
  if (t < cert.validFromDate.getTime()) return true;
  const renewAt = renewalTime(certPem);
  return renewAt === undefined || t >= renewAt.getTime();
}

/** Whether `keyPem` is the private key of `certPem` (false when either does not parse). */
export function keyMatchesCertificate(certPem: string, keyPem: string): boolean {
  const cert = tryNodeCertificate(certPem);
  if (cert === undefined) return false;
  try {
    return cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    // An unparsable key matches nothing.
    return false;
  }
}

/**
 * Throws a TypeError saying what is wrong unless `ca` can issue workload certificates at `now`:
 * a CA certificate, currently valid, ECDSA P-256, whose key is `ca.keyPem`. For start-up checks.
 */
export function validateCertificateAuthority(ca: CertificateAuthority, now: Date = new Date()): void {
  const cert = tryNodeCertificate(ca.certPem);
  if (cert === undefined) throw new TypeError('the internal CA certificate is not a PEM X.509 certificate');
  if (!cert.ca) throw new TypeError(`the internal CA certificate (${cert.subject}) is not a CA certificate (basicConstraints CA:FALSE)`);
  if (cert.publicKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new TypeError('the internal CA key must be ECDSA P-256');
  if (now < cert.validFromDate || now >= cert.validToDate) {
    throw new TypeError(
      `the internal CA certificate is valid from ${cert.validFromDate.toISOString()} to ${cert.validToDate.toISOString()}, not now`,
    );
  }
  if (!keyMatchesCertificate(ca.certPem, ca.keyPem))
    throw new TypeError('the internal CA key is not the private key of the CA certificate');
}

function tryNodeCertificate(pem: string): NodeX509Certificate | undefined {
  try {
    return new NodeX509Certificate(pem);
  } catch {
    // Unparsable input is a normal answer here ("renew it"), not an error to report.
    return undefined;
  }
}

function parseCertificate(x509: typeof X509, pem: string, what: string): X509.X509Certificate {
  try {
    return new x509.X509Certificate(pem);
  } catch (error) {
    throw new TypeError(`${what} is not a PEM X.509 certificate`, { cause: error });
  }
}

async function exportKeyPem(x509: typeof X509, crypto: Crypto, key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

async function importKeyPem(x509: typeof X509, crypto: Crypto, pem: string): Promise<CryptoKey> {
  let der: ArrayBuffer;
  try {
    const blocks = x509.PemConverter.decodeWithHeaders(pem).filter((b) => b.type === 'PRIVATE KEY');
    if (blocks.length !== 1 || blocks[0] === undefined) throw new TypeError('expected one PRIVATE KEY block');
    der = blocks[0].rawData;
  } catch (error) {
    throw new TypeError('CA key is not a PEM PKCS#8 private key', { cause: error });
  }
  try {
    return await crypto.subtle.importKey('pkcs8', der, EC_KEY, false, ['sign']);
  } catch (error) {
    throw new TypeError('CA key is not an ECDSA P-256 key', { cause: error });
  }
}

function randomSerial(crypto: Crypto): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  // Positive and 16 bytes long once DER-encoded (RFC 5280: positive, at most 20 octets).
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return Buffer.from(bytes).toString('hex');
}

function requireLabel(what: string, value: string): void {
  if (!DNS_LABEL.test(value)) throw new TypeError(`${what} ${JSON.stringify(value)} is not a DNS label`);
}

function requireValidity(days: number): void {
  if (!Number.isFinite(days) || days <= 0) throw new RangeError(`validityDays must be a positive number, got ${days}`);
}
