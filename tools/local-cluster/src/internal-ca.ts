import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCertificateAuthority, validateCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';

/** File names of the internal CA, as in the Secret kruntimes-internal-ca and `--internal-ca-dir`. */
export const INTERNAL_CA_FILES = { cert: 'ca.crt', key: 'ca.key' } as const;

/**
 * The internal CA in `dir` (`ca.crt`, `ca.key`), made on first use and kept afterwards, so
 * that certificates issued from it stay valid across restarts of the local cluster. A CA
 * that is there but unusable (one file missing, expired, key not matching) is an error to
 * fix by hand (remove `dir`), never silently replaced.
 */
export async function ensureInternalCa(dir: string): Promise<CertificateAuthority> {
  const certPath = join(dir, INTERNAL_CA_FILES.cert);
  const keyPath = join(dir, INTERNAL_CA_FILES.key);
  const [certPem, keyPem] = await Promise.all([readIfExists(certPath), readIfExists(keyPath)]);
  if (certPem !== undefined && keyPem !== undefined) {
    const ca = { certPem, keyPem };
    try {
      validateCertificateAuthority(ca);
    } catch (error) {
      throw new Error(`the internal CA in ${dir} is unusable (remove the directory to get a new one)`, { cause: error });
    }
    return ca;
  }
  if (certPem !== undefined || keyPem !== undefined) {
    throw new Error(
      `${dir} holds only one of ${INTERNAL_CA_FILES.cert} and ${INTERNAL_CA_FILES.key} (remove the directory to get a new CA)`,
    );
  }
  const ca = await createCertificateAuthority({ commonName: 'kruntimes local internal CA' });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // The key first and the certificate last, each renamed into place: a crash leaves no
  // certificate without its key.
  await writeAtomically(keyPath, ca.keyPem, 0o600);
  await writeAtomically(certPath, ca.certPem, 0o644);
  return ca;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function writeAtomically(path: string, text: string, mode: number): Promise<void> {
  const temporary = `${path}.${String(process.pid)}.tmp`;
  await writeFile(temporary, text, { mode });
  // writeFile's mode is masked by the umask; the key must end up 0600 whatever it is.
  await chmod(temporary, mode);
  await rename(temporary, path);
}
