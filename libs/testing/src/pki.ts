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
  /** kube-apiserver's identity towards kubelets (logs, exec, port-forward), signed by the CA above. */
  kubeletClientCert: string;
  kubeletClientKey: string;
  /**
   * Signs only the local node agents' serving certificate: kube-apiserver verifies the
   * kubelet endpoint against it (`--kubelet-certificate-authority`), so no other
   * certificate of this PKI (its own serving one included) passes for a node.
   */
  kubeletServingCaCert: string;
  /** The local node agent's serving certificate and key, for its InternalIP (LOCAL_NODE_IP). */
  localNodeServingCert: string;
  localNodeServingKey: string;
}

/**
 * The InternalIP every local node agent (tools/local-node) posts and serves its kubelet
 * endpoint on; its serving certificate names this address and nothing else.
 */
export const LOCAL_NODE_IP = LOOPBACK;

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
  validityDays?: number;
}

/**
 * Generates a CA, a kube-apiserver serving certificate and kubelet client certificate
 * signed by it, the service-account signing key pair, and the kubelet serving CA with
 * the local node agents' serving certificate, as files for the control plane's flags. The
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
    kubeletClientCert: join(dir, 'kubelet-client.crt'),
    kubeletClientKey: join(dir, 'kubelet-client.key'),
    kubeletServingCaCert: join(dir, 'kubelet-serving-ca.crt'),
    localNodeServingCert: join(dir, 'local-node.crt'),
    localNodeServingKey: join(dir, 'local-node.key'),
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
  const kubeletClient = await testClientCert(ca, KUBELET_CLIENT_USER, validity);
  const kubeletServingCa = await testCa('kruntimes-test-kubelet-serving-ca', validity);
  const localNodeServing = await testServerCert(kubeletServingCa, { commonName: 'local-node', ips: [LOCAL_NODE_IP] }, validity);
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
    writeFile(pki.kubeletClientCert, kubeletClient.certPem),
    writeFile(pki.kubeletClientKey, kubeletClient.keyPem, { mode: 0o600 }),
    writeFile(pki.kubeletServingCaCert, kubeletServingCa.certPem),
    writeFile(pki.localNodeServingCert, localNodeServing.certPem),
    writeFile(pki.localNodeServingKey, localNodeServing.keyPem, { mode: 0o600 }),
  ]);
  return pki;
}
