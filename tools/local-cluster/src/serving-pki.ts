import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** PEM certificate and its PKCS#8 key. */
export interface PemPair {
  certPem: string;
  keyPem: string;
}

/** A CA for the gateway's serving certificate (what clients of the local gateway trust). */
export async function servingCa(commonName: string, scratchDir: string): Promise<PemPair> {
  return issue(undefined, commonName, ['basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign, digitalSignature', 'subjectKeyIdentifier = hash'], scratchDir);
}

/** A serving certificate signed by `ca` for 127.0.0.1 and localhost. */
export async function loopbackServingCert(ca: PemPair, scratchDir: string): Promise<PemPair> {
  return issue(
    ca,
    'localhost',
    [
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = serverAuth',
      'subjectAltName = DNS:localhost, IP:127.0.0.1',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
    ],
    scratchDir,
  );
}

/** ECDSA P-256 by the openssl CLI with an explicit config (as the harness does for the control plane). */
async function issue(ca: PemPair | undefined, commonName: string, extensions: string[], scratchDir: string): Promise<PemPair> {
  const dir = await mkdtemp(join(scratchDir, 'pki-'));
  try {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const files = { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem'), config: join(dir, 'openssl.cnf'), caCert: join(dir, 'ca.pem'), caKey: join(dir, 'ca.key') };
    await writeFile(files.key, privateKey, { mode: 0o600 });
    await writeFile(files.config, ['[req]', 'prompt = no', 'distinguished_name = dn', 'x509_extensions = ext', '[dn]', `CN = ${commonName}`, '[ext]', ...extensions, ''].join('\n'));
    const args = ['req', '-x509', '-new', '-key', files.key, '-out', files.cert, '-days', '30', '-config', files.config, '-set_serial', `0x${randomBytes(8).toString('hex')}`];
    if (ca !== undefined) {
      await writeFile(files.caCert, ca.certPem);
      await writeFile(files.caKey, ca.keyPem, { mode: 0o600 });
      args.push('-CA', files.caCert, '-CAkey', files.caKey);
    }
    await run('openssl', args, { timeout: 30_000 });
    return { certPem: await readFile(files.cert, 'utf8'), keyPem: privateKey };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
