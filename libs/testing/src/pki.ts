import { generateKeyPairSync } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOOPBACK } from './ports.ts';
import { testCa, testClientCert, testServerCert } from './test-pki.ts';

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
  /** kube-apiserver's identity towards kubelets (logs, exec, port-forward); only with `kubeletClient`. */
  kubeletClientCert?: string;
  kubeletClientKey?: string;
}

/**
 * The user of the kubelet client certificate. It is in system:masters, so the kubelets'
 * webhook authorization (a SubjectAccessReview for it) allows it without an RBAC binding.
 */
const KUBELET_CLIENT_USER = { commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'] } as const;

export interface PkiOptions {
  /** The first address of the Service range: in-cluster clients verify the cert against it. */
  serviceIp: string;
  /** More addresses kube-apiserver serves on (its bind address when not loopback). */
  extraIps?: readonly string[];
  /** Also issue the kubelet client certificate. */
  kubeletClient?: boolean;
  validityDays?: number;
}

/**
 * Generates a CA, a kube-apiserver serving certificate signed by it and the
 * service-account signing key pair, as files for the control plane's flags. The
 * certificates come from test-pki.ts (the openssl CLI with explicit config files).
 */
export async function generatePki(dir: string, options: PkiOptions): Promise<Pki> {
  const pki: Pki = {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    servingCert: join(dir, 'apiserver.crt'),
    servingKey: join(dir, 'apiserver.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPublicKey: join(dir, 'sa.pub'),
  };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const validity = { validityDays: options.validityDays ?? 365 };
  const ca = await testCa('kruntimes-test-ca', validity);
  const serving = await testServerCert(
    ca,
    {
      commonName: 'kube-apiserver',
      ips: [LOOPBACK, options.serviceIp, ...(options.extraIps ?? [])],
      dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
    },
    validity,
  );
  if (options.kubeletClient === true) {
    const client = await testClientCert(ca, KUBELET_CLIENT_USER, validity);
    pki.kubeletClientCert = join(dir, 'kubelet-client.crt');
    pki.kubeletClientKey = join(dir, 'kubelet-client.key');
    await writeFile(pki.kubeletClientCert, client.certPem);
    await writeFile(pki.kubeletClientKey, client.keyPem, { mode: 0o600 });
  }
  const { privateKey, publicKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  await Promise.all([
    writeFile(pki.caCert, ca.certPem),
    writeFile(pki.caKey, ca.keyPem, { mode: 0o600 }),
    writeFile(pki.servingCert, serving.certPem),
    writeFile(pki.servingKey, serving.keyPem, { mode: 0o600 }),
    writeFile(pki.serviceAccountKey, privateKey, { mode: 0o600 }),
    writeFile(pki.serviceAccountPublicKey, publicKey),
  ]);
  return pki;
}
