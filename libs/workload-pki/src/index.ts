export {
  createCertificateAuthority,
  identityOfCertificate,
  issueWorkloadCertificate,
  keyMatchesCertificate,
  needsRenewal,
  renewalTime,
  runtimeIdentity,
  validateCertificateAuthority,
} from './workload-pki.ts';
export type { CertificateAuthority, WorkloadCertificate } from './workload-pki.ts';
