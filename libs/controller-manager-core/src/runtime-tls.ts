import { TLS_SECRET_KEYS } from '@kruntimes/runtime-workload';
import { identityOfCertificate, keyMatchesCertificate, needsRenewal, renewalTime, runtimeIdentity } from '@kruntimes/workload-pki';

/** Longest wait before a Runtime's certificate is looked at again, whatever its renewal time. */
export const MAX_TLS_RECHECK_MS = 6 * 3_600_000;
/** Shortest: a renewal point in the past or a few ms ahead is handled on the next reconcile soon. */
const MIN_TLS_RECHECK_MS = 1_000;

export type TlsSecretDecision =
  | { action: 'keep'; recheckAfterMs: number }
  | { action: 'issue'; reason: string }
  /** The certificate can stay; only `gateway-ca.crt` is rewritten (added, replaced or removed). */
  | { action: 'update-gateway-ca'; reason: string; recheckAfterMs: number };

/**
 * Whether the `<runtime>-runtimed-tls` Secret's contents can stay, from its decoded keys:
 * it is rewritten only when something is wrong with it (missing keys, a certificate for
 * another identity, a key that is not the certificate's, another CA, or a third or less of
 * its validity left); otherwise it is kept, and looked at again at its renewal point.
 * `gateway-ca.crt` must be exactly `gatewayCaPem` (absent when that is undefined): when only
 * it differs, the Secret is rewritten with the same certificate and key.
 */
export function tlsSecretDecision(input: {
  data: Readonly<Record<string, string>> | undefined;
  caPem: string;
  /** The gateway CA the Secret must carry as `gateway-ca.crt`; undefined: no such key. */
  gatewayCaPem?: string | undefined;
  namespace: string;
  runtime: string;
  now: number;
}): TlsSecretDecision {
  const ca = input.data?.[TLS_SECRET_KEYS.ca];
  const cert = input.data?.[TLS_SECRET_KEYS.cert];
  const key = input.data?.[TLS_SECRET_KEYS.key];
  if (ca === undefined || cert === undefined || key === undefined) return { action: 'issue', reason: 'missing keys' };
  if (ca !== input.caPem) return { action: 'issue', reason: 'the internal CA changed' };
  if (identityOfCertificate(cert) !== runtimeIdentity(input.namespace, input.runtime))
    return { action: 'issue', reason: 'certificate of another identity' };
  if (!keyMatchesCertificate(cert, key)) return { action: 'issue', reason: 'key does not match the certificate' };
  if (needsRenewal(cert, input.caPem, new Date(input.now))) return { action: 'issue', reason: 'renewal due' };
  const renewAt = renewalTime(cert)?.getTime() ?? input.now;
  const recheckAfterMs = Math.min(MAX_TLS_RECHECK_MS, Math.max(MIN_TLS_RECHECK_MS, renewAt - input.now));
  if (input.data?.[TLS_SECRET_KEYS.gatewayCa] !== input.gatewayCaPem)
    return { action: 'update-gateway-ca', reason: 'gateway-ca.crt differs', recheckAfterMs };
  return { action: 'keep', recheckAfterMs };
}

/** A Secret's `data` (base64) decoded as UTF-8 text. */
export function decodeSecretData(data: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  if (data === undefined) return undefined;
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]));
}
