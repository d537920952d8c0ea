import { isIP } from 'node:net';
import { RecencyBoundedMap } from '@kruntimes/controller-runtime';
import type { ErrorCode } from '@kruntimes/errors';
import type { UpstreamAddress } from './resolver.ts';

/**
 * Owner affinity ("Owner affinity" in docs/invoke-contract.md): runtimed's answer names the
 * owner Pod it served as or forwarded to; the gateway remembers it briefly per Run and dials
 * that Pod's runtimed first next time, so the common path has no peer hop. A hint is only a
 * preference among the Runtime's ready endpoints, never an address of its own: a forged or
 * stale one can at worst cost today's path (any runtimed, which forwards once or refuses).
 */

/** What an answer named: the owner Pod's IP and the Run's attempt it serves. */
export interface NamedOwner {
  ip: string;
  attempt: number;
}

export interface OwnerHint extends NamedOwner {
  expiresAtMs: number;
}

/** Which endpoints to dial, in order (at most two), and what became of the hint. */
export interface UpstreamChoice {
  upstreams: UpstreamAddress[];
  /**
   * followed: the hinted owner is dialled first; none: there was no hint; expired, not-an-endpoint:
   * there was one, unusable now (the caller forgets it).
   */
  hint: 'followed' | 'none' | 'expired' | 'not-an-endpoint';
}

/** At most two endpoints are ever dialled: the second only when the first could not be connected to. */
const DIALLED = 2;

/**
 * The endpoints to dial for one invoke. `endpoints` come from the resolver in its own
 * (balanced) order; a live hint whose IP is one of them goes first, followed by the first
 * other endpoint as the fallback for a dial that fails before anything was sent. A hint
 * naming an address outside the endpoints (a Pod gone, not ready, or a forged answer) is
 * never dialled.
 */
export function decideUpstreams(hint: OwnerHint | undefined, endpoints: readonly UpstreamAddress[], nowMs: number): UpstreamChoice {
  const balanced = endpoints.slice(0, DIALLED);
  if (hint === undefined) return { upstreams: balanced, hint: 'none' };
  if (hint.expiresAtMs <= nowMs) return { upstreams: balanced, hint: 'expired' };
  const owner = endpoints.find((endpoint) => endpoint.ip === hint.ip);
  if (owner === undefined) return { upstreams: balanced, hint: 'not-an-endpoint' };
  const fallback = endpoints.find((endpoint) => endpoint !== owner);
  return { upstreams: fallback === undefined ? [owner] : [owner, fallback], hint: 'followed' };
}

/**
 * Answers that say the Run is not served where the hint points (or not at all): the hint is
 * dropped, so the next invoke takes the balanced path and learns the owner again.
 */
const DROPPING: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'RunNotFound',
  'RunNotReady',
  'OwnerUnavailable',
  'EpochMismatch',
  'RegistrationLost',
]);

export type HintUpdate = { type: 'set'; hint: OwnerHint } | { type: 'drop' } | { type: 'keep' };

export interface AnsweredInvoke {
  /** Undefined: the call succeeded. */
  code: ErrorCode | undefined;
  /** The owner the answer named (already parsed), if any. */
  owner: NamedOwner | undefined;
  /** The dial to the hinted owner failed before anything was sent. */
  hintedDialFailed: boolean;
}

/**
 * What one answer does to the Run's hint. A refusal that means "not here" drops it; an
 * answer naming an owner sets it (for `ttlMs`), unless the live hint names a newer attempt
 * (an answer from a runtimed whose cache lags the recovery must not undo what a newer one
 * taught); anything else (401, 403, 400: answered before routing) leaves it.
 */
export function decideHintUpdate(current: OwnerHint | undefined, answer: AnsweredInvoke, nowMs: number, ttlMs: number): HintUpdate {
  if (answer.hintedDialFailed || (answer.code !== undefined && DROPPING.has(answer.code)))
    return current === undefined ? { type: 'keep' } : { type: 'drop' };
  const { owner } = answer;
  if (owner === undefined) return { type: 'keep' };
  const live = current !== undefined && current.expiresAtMs > nowMs;
  if (live && current.attempt > owner.attempt) return { type: 'keep' };
  // The same owner again: renewed only once half its life has passed (not one write per invoke).
  if (live && current.ip === owner.ip && current.attempt === owner.attempt && current.expiresAtMs - nowMs > ttlMs / 2)
    return { type: 'keep' };
  return { type: 'set', hint: { ip: owner.ip, attempt: owner.attempt, expiresAtMs: nowMs + ttlMs } };
}

/** The owner named by runtimed's trailers, or undefined when they are absent or malformed. */
export function parseNamedOwner(address: string | undefined, epoch: string | undefined): NamedOwner | undefined {
  if (address === undefined || epoch === undefined || isIP(address) === 0 || !/^\d{1,15}$/.test(epoch)) return undefined;
  return { ip: address, attempt: Number(epoch) };
}

export interface OwnerHintsOptions {
  /** Runs remembered at most (least recently set dropped first). Default 10,000. */
  capacity?: number;
  /** How long a hint lives after the answer that set it. Default 30 s. */
  ttlMs?: number;
  now?: () => number;
}

/**
 * The hints per Run (keyed by namespace, Runtime and Run UID: a hint only ever applies to
 * the Runtime whose endpoints it is matched against), bounded in count and age.
 */
export class OwnerHints {
  readonly #hints: RecencyBoundedMap<string, OwnerHint>;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: OwnerHintsOptions = {}) {
    this.#hints = new RecencyBoundedMap(options.capacity ?? 10_000);
    this.#ttlMs = options.ttlMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  /** The endpoints to dial for this Run, the hinted owner first when it is one of them. */
  choose(key: string, endpoints: readonly UpstreamAddress[]): UpstreamChoice {
    const choice = decideUpstreams(this.#hints.get(key), endpoints, this.#now());
    if (choice.hint === 'expired' || choice.hint === 'not-an-endpoint') this.#hints.delete(key);
    return choice;
  }

  /** Learns from one answer. */
  learn(key: string, answer: AnsweredInvoke): void {
    const update = decideHintUpdate(this.#hints.get(key), answer, this.#now(), this.#ttlMs);
    if (update.type === 'set') this.#hints.set(key, update.hint);
    else if (update.type === 'drop') this.#hints.delete(key);
  }

  /** For tests: sets a hint as if an answer had named it. */
  remember(key: string, owner: NamedOwner): void {
    this.#hints.set(key, { ...owner, expiresAtMs: this.#now() + this.#ttlMs });
  }

  get size(): number {
    return this.#hints.size;
  }
}

/** The hint key of one Run of one Runtime. */
export function hintKey(namespace: string, runtime: string, uid: string): string {
  return `${namespace}/${runtime}/${uid}`;
}
