import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LOOPBACK } from './ports.ts';

const run = promisify(execFile);

/** Files of the throwaway PKI of one control plane. Every key is ECDSA P-256 (fast to make). */
export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  /** Signs service-account tokens (kube-apiserver) ... */
  serviceAccountKey: string;
  /** ... and verifies them. */
  serviceAccountPublicKey: string;
}

export interface PkiOptions {
  /** The first address of the Service range: in-cluster clients verify the cert against it. */
  serviceIp: string;
  validityDays?: number;
}

/**
 * Generates a CA, a kube-apiserver serving certificate signed by it and the
 * service-account signing key pair. Keys come from node:crypto; node cannot issue X.509
 * certificates, so the two certificates are issued by the openssl CLI with explicit
 * config files, independent of the host's openssl.cnf defaults.
 */
export async function generatePki(dir: string, options: PkiOptions): Promise<Pki> {
  const days = String(options.validityDays ?? 365);
  const pki: Pki = {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    servingCert: join(dir, 'apiserver.crt'),
    servingKey: join(dir, 'apiserver.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPublicKey: join(dir, 'sa.pub'),
  };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await Promise.all([
    writePrivateKey(pki.caKey),
    writePrivateKey(pki.servingKey),
    writePrivateKey(pki.serviceAccountKey, pki.serviceAccountPublicKey),
  ]);

  const caConfig = join(dir, 'ca.cnf');
  await writeFile(
    caConfig,
    opensslConfig('kruntimes-test-ca', [
      'basicConstraints = critical, CA:TRUE',
      'keyUsage = critical, keyCertSign, cRLSign, digitalSignature',
      'subjectKeyIdentifier = hash',
    ]),
  );
  await openssl(['req', '-x509', '-new', '-key', pki.caKey, '-out', pki.caCert, '-days', days, '-config', caConfig]);

  const servingConfig = join(dir, 'apiserver.cnf');
  const altNames = [
    `IP:${LOOPBACK}`,
    `IP:${options.serviceIp}`,
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
  ];
  await writeFile(
    servingConfig,
    opensslConfig('kube-apiserver', [
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature, keyEncipherment',
      'extendedKeyUsage = serverAuth',
      `subjectAltName = ${altNames.join(', ')}`,
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
    ]),
  );
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    pki.servingKey,
    '-CA',
    pki.caCert,
    '-CAkey',
    pki.caKey,
    '-out',
    pki.servingCert,
    '-days',
    days,
    '-config',
    servingConfig,
  ]);
  return pki;
}

async function writePrivateKey(keyFile: string, publicKeyFile?: string): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  await writeFile(keyFile, privateKey, { mode: 0o600 });
  if (publicKeyFile !== undefined) await writeFile(publicKeyFile, publicKey);
}

function opensslConfig(commonName: string, extensions: string[]): string {
  return [
    '[req]',
    'prompt = no',
    'distinguished_name = dn',
    'x509_extensions = ext',
    '[dn]',
    `CN = ${commonName}`,
    '[ext]',
    ...extensions,
    '',
  ].join('\n');
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
