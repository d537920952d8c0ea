import { X509Certificate } from 'node:crypto';
import { testCa, testClientCert } from './test-pki.ts';

test('a client certificate names the user and its groups, for client authentication only', async () => {
  const ca = await testCa();
  const client = await testClientCert(ca, { commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters', 'other'] });
  const cert = new X509Certificate(client.certPem);
  expect(cert.subject.split('\n')).toEqual(['O=system:masters', 'O=other', 'CN=kube-apiserver-kubelet-client']);
  expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']); // clientAuth
  expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
});
