import { createCertificateAuthority, issueWorkloadCertificate } from '@kruntimes/workload-pki';
import type { CertificateAuthority, WorkloadCertificate } from '@kruntimes/workload-pki';
import { MAX_TLS_RECHECK_MS, decodeSecretData, tlsSecretDecision } from './runtime-tls.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T00:00:00Z');
let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
let fresh: WorkloadCertificate;
let other: WorkloadCertificate;
let old: WorkloadCertificate;

beforeAll(async () => {
  [ca, otherCa] = await Promise.all([
    createCertificateAuthority({ now: new Date(NOW) }),
    createCertificateAuthority({ now: new Date(NOW) }),
  ]);
  [fresh, other, old] = await Promise.all([
    issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'rt', now: new Date(NOW) }),
    issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'other', now: new Date(NOW) }),
    // 25 of its 30 days gone: a sixth left.
    issueWorkloadCertificate(ca, { namespace: 'ns', runtime: 'rt', now: new Date(NOW - 25 * DAY) }),
  ]);
});

const data =
  (cert: () => WorkloadCertificate, overrides: Record<string, string> = {}) =>
  (): Record<string, string> => ({
    'ca.crt': ca.certPem,
    'tls.crt': cert().certPem,
    'tls.key': cert().keyPem,
    ...overrides,
  });

describe('tlsSecretDecision', () => {
  it.each<[string, () => Record<string, string> | undefined, string | undefined]>([
    ['a valid, fresh Secret', data(() => fresh), undefined],
    ['no data', () => undefined, 'missing keys'],
    ['no key', () => ({ 'ca.crt': ca.certPem, 'tls.crt': fresh.certPem }), 'missing keys'],
    ['another CA in ca.crt', () => ({ ...data(() => fresh)(), 'ca.crt': otherCa.certPem }), 'the internal CA changed'],
    ['a certificate of another Runtime', data(() => other), 'certificate of another identity'],
    ['a key of another certificate', () => ({ ...data(() => fresh)(), 'tls.key': other.keyPem }), 'key does not match the certificate'],
    ['a certificate with a sixth of its validity left', data(() => old), 'renewal due'],
    ['garbage', () => ({ 'ca.crt': ca.certPem, 'tls.crt': 'x', 'tls.key': 'y' }), 'certificate of another identity'],
  ])('%s -> %s', (_what, secretData, reason) => {
    const decision = tlsSecretDecision({ data: secretData(), caPem: ca.certPem, namespace: 'ns', runtime: 'rt', now: NOW });
    expect(decision).toEqual(reason === undefined ? { action: 'keep', recheckAfterMs: MAX_TLS_RECHECK_MS } : { action: 'issue', reason });
  });

  it('rewrites only gateway-ca.crt when it alone differs from the configured gateway CA, and never churns otherwise', () => {
    const decide = (secret: Record<string, string>, gatewayCaPem: string | undefined) =>
      tlsSecretDecision({ data: secret, caPem: ca.certPem, gatewayCaPem, namespace: 'ns', runtime: 'rt', now: NOW });
    const update = { action: 'update-gateway-ca', reason: 'gateway-ca.crt differs', recheckAfterMs: MAX_TLS_RECHECK_MS };
    const keep = { action: 'keep', recheckAfterMs: MAX_TLS_RECHECK_MS };
    // Configured, and missing or another CA in the Secret.
    expect(decide(data(() => fresh)(), otherCa.certPem)).toEqual(update);
    expect(decide(data(() => fresh, { 'gateway-ca.crt': ca.certPem })(), otherCa.certPem)).toEqual(update);
    // No longer configured: the stale key goes.
    expect(decide(data(() => fresh, { 'gateway-ca.crt': otherCa.certPem })(), undefined)).toEqual(update);
    // Equal, or neither: kept.
    expect(decide(data(() => fresh, { 'gateway-ca.crt': otherCa.certPem })(), otherCa.certPem)).toEqual(keep);
    expect(decide(data(() => fresh)(), undefined)).toEqual(keep);
    // A certificate that must be reissued anyway is reissued (the new Secret carries the gateway CA too).
    expect(decide(data(() => old)(), otherCa.certPem)).toEqual({ action: 'issue', reason: 'renewal due' });
  });

  it('comes back at the renewal point when it is nearer than the longest recheck', () => {
    const renewAt = NOW - 5 * 60_000 + (2 / 3) * (30 * DAY + 5 * 60_000);
    const now = renewAt - 60_000;
    const decision = tlsSecretDecision({ data: data(() => fresh)(), caPem: ca.certPem, namespace: 'ns', runtime: 'rt', now });
    expect(decision.action).toBe('keep');
    if (decision.action === 'keep') expect(Math.abs(decision.recheckAfterMs - 60_000)).toBeLessThan(1_000);
  });
});

test('decodeSecretData decodes base64 values', () => {
  expect(decodeSecretData({ a: Buffer.from('héllo').toString('base64') })).toEqual({ a: 'héllo' });
  expect(decodeSecretData(undefined)).toBeUndefined();
});
