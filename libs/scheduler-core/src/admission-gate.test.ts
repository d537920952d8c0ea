import { RUN_REASONS } from '@kruntimes/api';
import { decideAdmission, decideBlockPolicy } from './admission-gate.ts';
import type { AdmissionFacts, AdmissionVerdict } from './admission-gate.ts';

const facts = (overrides: Partial<AdmissionFacts>): AdmissionFacts => ({
  runtime: 'shell',
  namespace: 'team-a',
  runtimeSuspended: false,
  namespaceLabels: {},
  access: { kind: 'allowed' },
  ...overrides,
});

/** A verdict as `admit`, `defer` or its refusal reason. */
const short = (verdict: AdmissionVerdict): string => (verdict.action === 'refuse' ? verdict.reason : verdict.action);

describe('decideAdmission', () => {
  it.each<[string, Partial<AdmissionFacts>, string]>([
    ['nothing blocks, the creator may use the Runtime', {}, 'admit'],
    ['the Runtime is suspended', { runtimeSuspended: true }, RUN_REASONS.runtimeSuspended],
    ['the namespace is labelled blocked', { namespaceLabels: { 'kruntimes.io/blocked': 'true' } }, RUN_REASONS.namespaceBlocked],
    ['a blocked label other than "true" does not block', { namespaceLabels: { 'kruntimes.io/blocked': 'false' } }, 'admit'],
    ['a namespace not in the cache does not block', { namespaceLabels: undefined }, 'admit'],
    [
      'suspended wins over blocked and denied (the first that applies is the reason)',
      {
        runtimeSuspended: true,
        namespaceLabels: { 'kruntimes.io/blocked': 'true' },
        access: { kind: 'denied', user: 'alice', reason: '' },
      },
      RUN_REASONS.runtimeSuspended,
    ],
    [
      'blocked wins over denied',
      { namespaceLabels: { 'kruntimes.io/blocked': 'true' }, access: { kind: 'denied', user: 'alice', reason: '' } },
      RUN_REASONS.namespaceBlocked,
    ],
    ['the creator may no longer use the Runtime', { access: { kind: 'denied', user: 'alice', reason: '' } }, RUN_REASONS.forbidden],
    ['no creator recorded: admitted as before the policy', { access: { kind: 'unrecorded' } }, 'admit'],
    ['not reviewed: admitted', { access: undefined }, 'admit'],
    [
      'no answer about the creator: deferred, never bound on a guess',
      { access: { kind: 'unknown', user: 'alice', error: 'timeout' } },
      'defer',
    ],
  ])('%s', (_name, overrides, expected) => {
    expect(short(decideAdmission(facts(overrides)))).toBe(expected);
  });

  it('says who, which Runtime and which namespace', () => {
    const message = (verdict: AdmissionVerdict): string => (verdict.action === 'admit' ? '' : verdict.message);
    expect(message(decideAdmission(facts({ runtimeSuspended: true })))).toContain('Runtime shell is suspended');
    expect(message(decideAdmission(facts({ namespaceLabels: { 'kruntimes.io/blocked': 'true' } })))).toContain(
      'namespace team-a is labelled kruntimes.io/blocked=true',
    );
    expect(decideAdmission(facts({ access: { kind: 'denied', user: 'alice', reason: 'no RBAC rule' } }))).toEqual({
      action: 'refuse',
      reason: RUN_REASONS.forbidden,
      message: 'user alice, who created the Run, may no longer use Runtime shell (no RBAC rule)',
    });
    expect(decideAdmission(facts({ access: { kind: 'unknown', user: 'alice', error: 'timeout' } }))).toEqual({
      action: 'defer',
      message: 'could not check whether user alice, who created the Run, may use Runtime shell: timeout',
    });
  });

  it('decideBlockPolicy alone ignores access', () => {
    expect(decideBlockPolicy(facts({}))).toBeUndefined();
    expect(decideBlockPolicy(facts({ runtimeSuspended: true }))?.reason).toBe(RUN_REASONS.runtimeSuspended);
  });
});
