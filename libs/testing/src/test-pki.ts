import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PEM certificate and its PKCS#8 key. */
export interface TestCert {
  certPem: string;
  keyPem: string;
}

export interface IssueOptions {
  /** Default 2: long enough for a test run; the local dev cluster asks for more. */
  validityDays?: number;
}

/**
 * Throwaway ECDSA P-256 certificates for tests and the local cluster, issued by the
 * openssl CLI with explicit config files (as the harness does for the control plane).
 */
export async function testCa(name = 'kruntimes-test-ca', options: IssueOptions = {}): Promise<TestCert> {
  return issue(
    undefined,
    name,
    ['basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign, digitalSignature', 'subjectKeyIdentifier = hash'],
    options,
  );
}

/** A serving certificate signed by `ca` for DNS names and IP addresses. */
export async function testServerCert(
  ca: TestCert,
  names: { dns?: string[]; ips?: string[]; commonName?: string },
  options: IssueOptions = {},
): Promise<TestCert> {
  const san = [...(names.dns ?? []).map((dns) => `DNS:${dns}`), ...(names.ips ?? []).map((ip) => `IP:${ip}`)].join(', ');
  return issue(
    ca,
    names.commonName ?? names.dns?.[0] ?? names.ips?.[0] ?? 'server',
    [
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = serverAuth',
      `subjectAltName = ${san}`,
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
    ],
    options,
  );
}

/**
 * A client certificate signed by `ca`: Kubernetes reads the user from the common name and
 * the groups from the organizations.
 */
export async function testClientCert(
  ca: TestCert,
  subject: { commonName: string; organizations?: readonly string[] },
  options: IssueOptions = {},
): Promise<TestCert> {
  return issue(
    ca,
    subject.commonName,
    [
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = clientAuth',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
    ],
    options,
    subject.organizations,
  );
}

async function issue(
  ca: TestCert | undefined,
  commonName: string,
  extensions: string[],
  options: IssueOptions,
  organizations: readonly string[] = [],
): Promise<TestCert> {
  const dir = await mkdtemp(join(tmpdir(), 'test-pki-'));
  try {
    const { privateKey } = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const files = {
      key: join(dir, 'key.pem'),
      cert: join(dir, 'cert.pem'),
      config: join(dir, 'openssl.cnf'),
      caCert: join(dir, 'ca.pem'),
      caKey: join(dir, 'ca.key'),
    };
    await writeFile(files.key, privateKey, { mode: 0o600 });
    await writeFile(
      files.config,
      [
        '[req]',
        'prompt = no',
        'distinguished_name = dn',
        'x509_extensions = ext',
        '[dn]',
        // openssl takes a repeated field only with distinct `N.` prefixes.
        ...organizations.map((organization, i) => `${i}.O = ${organization}`),
        `CN = ${commonName}`,
        '[ext]',
        ...extensions,
        '',
      ].join('\n'),
    );
    const args = [
      'req',
      '-x509',
      '-new',
      '-key',
      files.key,
      '-out',
      files.cert,
      '-days',
      String(options.validityDays ?? 2),
      '-config',
      files.config,
      '-set_serial',
      `0x${randomBytes(8).toString('hex')}`,
    ];
    if (ca !== undefined) {
      await writeFile(files.caCert, ca.certPem);
      await writeFile(files.caKey, ca.keyPem, { mode: 0o600 });
      args.push('-CA', files.caCert, '-CAkey', files.caKey);
    }
    await openssl(args);
    return { certPem: await readFile(files.cert, 'utf8'), keyPem: privateKey };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args, { timeout: 30_000 });
  } catch (error) {
    const stderr = (error as { stderr?: unknown }).stderr;
    throw new Error(
      `openssl ${args.slice(0, 2).join(' ')} failed${typeof stderr === 'string' && stderr !== '' ? `: ${stderr.trim()}` : ''}`,
      { cause: error },
    );
  }
}
