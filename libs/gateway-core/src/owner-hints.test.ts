import { OwnerHints, decideHintUpdate, decideUpstreams, parseNamedOwner } from './owner-hints.ts';
import type { AnsweredInvoke, OwnerHint } from './owner-hints.ts';
import type { UpstreamAddress } from './resolver.ts';

const endpoint = (ip: string) => ({ address: `${ip}:7443`, ip, pod: `pod-${ip}` });
const A = endpoint('10.0.0.1');
const B = endpoint('10.0.0.2');
const C = endpoint('10.0.0.3');
const NOW = 1_000_000;
const TTL = 30_000;
const hint = (ip: string, attempt = 1, expiresAtMs = NOW + TTL): OwnerHint => ({ ip, attempt, expiresAtMs });

describe('decideUpstreams', () => {
  it.each<[string, OwnerHint | undefined, UpstreamAddress[], UpstreamAddress[], string]>([
    ['no hint: the balanced order, at most two', undefined, [A, B, C], [A, B], 'none'],
    ['a live hint among the endpoints goes first, then the first other endpoint', hint(C.ip), [A, B, C], [C, A], 'followed'],
    ['the hinted owner is the first endpoint: the next one is the fallback', hint(A.ip), [A, B, C], [A, B], 'followed'],
    ['the hinted owner is the only endpoint', hint(A.ip), [A], [A], 'followed'],
    ['a hint outside the endpoints (a Pod gone, a forged answer) is never dialled', hint('10.9.9.9'), [A, B], [A, B], 'not-an-endpoint'],
    ['an expired hint is not followed', hint(C.ip, 1, NOW), [A, B, C], [A, B], 'expired'],
    ['no endpoints at all', hint(A.ip), [], [], 'not-an-endpoint'],
  ])('%s', (_what, current, endpoints, upstreams, outcome) => {
    expect(decideUpstreams(current, endpoints, NOW)).toEqual({ upstreams, hint: outcome });
  });

  it('matches the hint by IP, never by an address the hint could carry', () => {
    const withoutIp: UpstreamAddress = { address: '10.0.0.1:7443' };
    expect(decideUpstreams(hint('10.0.0.1'), [withoutIp, B], NOW).hint).toBe('not-an-endpoint');
  });
});

describe('decideHintUpdate', () => {
  const answer = (fields: Partial<AnsweredInvoke>): AnsweredInvoke => ({
    code: undefined,
    owner: undefined,
    hintedDialFailed: false,
    ...fields,
  });
  const set = (ip: string, attempt: number) => ({ type: 'set', hint: { ip, attempt, expiresAtMs: NOW + TTL } });

  it.each<[string, OwnerHint | undefined, AnsweredInvoke, unknown]>([
    ['a success naming the owner sets the hint', undefined, answer({ owner: { ip: A.ip, attempt: 1 } }), set(A.ip, 1)],
    [
      'a forwarded success names the new owner: the stale hint is replaced',
      hint(B.ip, 1),
      answer({ owner: { ip: A.ip, attempt: 2 } }),
      set(A.ip, 2),
    ],
    [
      'an answer naming an older attempt than the live hint (a lagging cache) leaves it',
      hint(A.ip, 3),
      answer({ owner: { ip: B.ip, attempt: 2 } }),
      { type: 'keep' },
    ],
    ['an older attempt replaces an expired hint', hint(A.ip, 3, NOW), answer({ owner: { ip: B.ip, attempt: 2 } }), set(B.ip, 2)],
    [
      'the same owner again, young hint: not rewritten',
      hint(A.ip, 1, NOW + TTL - 1),
      answer({ owner: { ip: A.ip, attempt: 1 } }),
      { type: 'keep' },
    ],
    [
      'the same owner again past half its life: renewed',
      hint(A.ip, 1, NOW + TTL / 2),
      answer({ owner: { ip: A.ip, attempt: 1 } }),
      set(A.ip, 1),
    ],
    [
      'a function failure names the owner too: set',
      undefined,
      answer({ code: 'FunctionFailed', owner: { ip: A.ip, attempt: 1 } }),
      set(A.ip, 1),
    ],
    [
      '429 in flight names the owner: set',
      undefined,
      answer({ code: 'InvocationInFlight', owner: { ip: A.ip, attempt: 1 } }),
      set(A.ip, 1),
    ],
    ['503 RunNotReady drops it', hint(A.ip), answer({ code: 'RunNotReady' }), { type: 'drop' }],
    [
      '503 OwnerUnavailable drops it, even naming an owner',
      hint(A.ip),
      answer({ code: 'OwnerUnavailable', owner: { ip: A.ip, attempt: 1 } }),
      { type: 'drop' },
    ],
    ['503 EpochMismatch drops it', hint(A.ip), answer({ code: 'EpochMismatch' }), { type: 'drop' }],
    ['RegistrationLost drops it', hint(A.ip), answer({ code: 'RegistrationLost' }), { type: 'drop' }],
    ['404 RunNotFound drops it', hint(A.ip), answer({ code: 'RunNotFound' }), { type: 'drop' }],
    ['a refusal with no hint to drop', undefined, answer({ code: 'RunNotReady' }), { type: 'keep' }],
    [
      'the hinted owner could not be dialled: dropped, whatever the fallback named',
      hint(A.ip),
      answer({ hintedDialFailed: true, owner: { ip: A.ip, attempt: 1 } }),
      { type: 'drop' },
    ],
    ['403 before routing (no owner named) leaves it', hint(A.ip), answer({ code: 'Forbidden' }), { type: 'keep' }],
    ['401 before routing leaves it', hint(A.ip), answer({ code: 'Unauthenticated' }), { type: 'keep' }],
    ['a success naming no owner (an older runtimed) leaves it', hint(A.ip), answer({}), { type: 'keep' }],
  ])('%s', (_what, current, answered, update) => {
    expect(decideHintUpdate(current, answered, NOW, TTL)).toEqual(update);
  });
});

describe('parseNamedOwner', () => {
  it.each<[string, string | undefined, string | undefined, unknown]>([
    ['an IPv4 address and an attempt', '10.0.0.1', '3', { ip: '10.0.0.1', attempt: 3 }],
    ['an IPv6 address', 'fd00::1', '1', { ip: 'fd00::1', attempt: 1 }],
    ['no address', undefined, '1', undefined],
    ['no epoch', '10.0.0.1', undefined, undefined],
    ['a host name is not an address', 'evil.example.com', '1', undefined],
    ['an address with a port is not an IP', '10.0.0.1:7443', '1', undefined],
    ['a negative epoch', '10.0.0.1', '-1', undefined],
    ['an epoch that is not a number', '10.0.0.1', 'x', undefined],
  ])('%s', (_what, address, epoch, owner) => {
    expect(parseNamedOwner(address, epoch)).toEqual(owner);
  });
});

describe('OwnerHints', () => {
  const make = (capacity = 10) => {
    const clock = { now: NOW };
    return { hints: new OwnerHints({ capacity, ttlMs: TTL, now: () => clock.now }), clock };
  };
  const learned = (ip: string, attempt = 1): AnsweredInvoke => ({ code: undefined, owner: { ip, attempt }, hintedDialFailed: false });

  it('follows what an answer taught until it expires, then forgets it', () => {
    const { hints, clock } = make();
    expect(hints.choose('k', [A, B, C]).hint).toBe('none');
    hints.learn('k', learned(C.ip));
    expect(hints.choose('k', [A, B, C]).upstreams[0]).toBe(C);
    clock.now += TTL;
    expect(hints.choose('k', [A, B, C]).hint).toBe('expired');
    expect(hints.size).toBe(0);
  });

  it('forgets a hint that is not among the endpoints (the Pod is gone)', () => {
    const { hints } = make();
    hints.learn('k', learned(C.ip));
    expect(hints.choose('k', [A, B])).toEqual({ upstreams: [A, B], hint: 'not-an-endpoint' });
    expect(hints.size).toBe(0);
  });

  it('keeps at most its capacity, dropping the least recently set', () => {
    const { hints } = make(2);
    hints.learn('a', learned(A.ip));
    hints.learn('b', learned(B.ip));
    hints.learn('c', learned(C.ip));
    expect(hints.size).toBe(2);
    expect(hints.choose('a', [A, B, C]).hint).toBe('none');
    expect(hints.choose('c', [A, B, C]).hint).toBe('followed');
  });
});
