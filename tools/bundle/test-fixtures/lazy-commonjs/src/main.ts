// A bundle test's app: what the controller-manager does when it issues a Runtime's certificate,
// a lazily imported package whose only Node entry is CommonJS (@peculiar/x509, in workload-pki).
import { createCertificateAuthority } from '@kruntimes/workload-pki';

const ca = await createCertificateAuthority();
console.log(ca.certPem.split('\n')[0]);
