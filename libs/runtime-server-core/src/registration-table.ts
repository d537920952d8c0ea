import { KruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import type { Clock } from './clock.ts';

/** The immutable configuration of a registration; compared for idempotency. */
export interface FunctionConfig {
  readonly workdir: string;
  readonly handler: string;
  readonly env: Readonly<Record<string, string>>;
}

export interface RegistrationKey {
  readonly runUid: string;
  readonly attempt: number;
}

export type RegistrationState = 'starting' | 'ready' | 'failed';

export interface FatalError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly at: number;
}

/** A snapshot of one registration generation (what FunctionStatus reports). */
export interface Registration extends RegistrationKey {
  readonly id: string;
  readonly config: FunctionConfig;
  readonly state: RegistrationState;
  readonly fatalError: FatalError | undefined;
  /** Invocation ID in flight, if any (one at most). */
  readonly inFlight: string | undefined;
  readonly registeredAt: number;
  /** Latest of registeredAt and the start and end of every invocation. */
  readonly lastActivity: number;
  readonly invocations: number;
  readonly restarts: number;
}

export type RegisterOutcome =
  | { readonly kind: 'existing'; readonly registration: Registration }
  | { readonly kind: 'created'; readonly registration: Registration; readonly superseded: Registration | undefined };

/** Proof that an invocation holds a registration's single slot; hand it back to end it. */
export interface InvocationSlot {
  readonly registrationId: string;
  readonly invocationId: string;
}

type Entry = { -readonly [K in keyof Registration]: Registration[K] };

export interface RegistrationTableOptions {
  readonly clock: Clock;
  readonly newId: () => string;
  /**
   * How many released (unregistered) Run UIDs keep their attempt remembered. A
   * released attempt may never register again: a delayed retry of RegisterFunction
   * arriving after the UnregisterFunction that fenced the epoch must not bring the
   * function back ("Fencing" in docs/lifecycle.md). Bounded so that memory stays flat; runtimed's own
   * fencing covers the evicted ones.
   */
  readonly releasedCapacity?: number;
}

export function sameConfig(a: FunctionConfig, b: FunctionConfig): boolean {
  if (a.workdir !== b.workdir || a.handler !== b.handler) return false;
  const aKeys = Object.keys(a.env);
  return aKeys.length === Object.keys(b.env).length && aKeys.every((key) => Object.hasOwn(b.env, key) && b.env[key] === a.env[key]);
}

/**
 * The registration table of one Runtime Server: every rule of `proto/kruntimes/runtimeserver/v1` and
 * nothing else. Pure (no processes, no I/O): time and IDs are injected. At most one
 * generation per Run UID exists at any moment, which is the local half of the
 * invariant "never two registrations serving one Run UID".
 */
export class RegistrationTable {
  readonly #byId = new Map<string, Entry>();
  readonly #byRun = new Map<string, Entry>();
  /** Run UID -> highest attempt that was unregistered. */
  readonly #released = new Map<string, number>();
  readonly #clock: Clock;
  readonly #newId: () => string;
  readonly #releasedCapacity: number;

  constructor(options: RegistrationTableOptions) {
    this.#clock = options.clock;
    this.#newId = options.newId;
    this.#releasedCapacity = options.releasedCapacity ?? 4096;
  }

  get size(): number {
    return this.#byId.size;
  }

  /**
   * Same attempt + same config: the existing generation (whatever its state: a failed
   * one is recovered by a higher attempt, not by repeating this one). Same attempt +
   * other config: RegistrationConflict. Lower attempt, or an attempt at or below a
   * released one: StaleAttempt. Higher attempt: a new generation that supersedes the
   * current one, whose ID is invalid from now on.
   */
  register(key: RegistrationKey, config: FunctionConfig): RegisterOutcome {
    const current = this.#byRun.get(key.runUid);
    if (current !== undefined) {
      if (key.attempt === current.attempt) {
        if (sameConfig(current.config, config)) return { kind: 'existing', registration: snapshot(current) };
        throw new KruntimesError(
          'RegistrationConflict',
          `run ${key.runUid} attempt ${key.attempt} is already registered with another configuration`,
          { terminal: true },
        );
      }
      if (key.attempt < current.attempt) {
        throw new KruntimesError(
          'StaleAttempt',
          `run ${key.runUid} attempt ${key.attempt} is older than the registered attempt ${current.attempt}`,
          { terminal: true },
        );
      }
    } else {
      const released = this.#released.get(key.runUid);
      if (released !== undefined && key.attempt <= released) {
        throw new KruntimesError(
          'StaleAttempt',
          `run ${key.runUid} attempt ${released} was unregistered; only a higher attempt may register`,
          { terminal: true },
        );
      }
    }
    const superseded = current === undefined ? undefined : this.#remove(current);
    const now = this.#clock();
    const entry: Entry = {
      id: this.#newId(),
      runUid: key.runUid,
      attempt: key.attempt,
      config: { workdir: config.workdir, handler: config.handler, env: { ...config.env } },
      state: 'starting',
      fatalError: undefined,
      inFlight: undefined,
      registeredAt: now,
      lastActivity: now,
      invocations: 0,
      restarts: 0,
    };
    this.#byId.set(entry.id, entry);
    this.#byRun.set(entry.runUid, entry);
    return { kind: 'created', registration: snapshot(entry), superseded };
  }

  /** The current generation with this ID; RegistrationNotFound when unknown or superseded. */
  get(id: string): Registration {
    return snapshot(this.#entry(id));
  }

  has(id: string): boolean {
    return this.#byId.has(id);
  }

  /** The function loaded: invocations may start. */
  markReady(id: string): void {
    const entry = this.#entry(id);
    if (entry.state === 'starting') entry.state = 'ready';
  }

  /** A fatal error ended the generation: not ready, reported with its cause until released. */
  markFailed(id: string, code: ErrorCode, message: string): void {
    const entry = this.#byId.get(id);
    if (entry === undefined || entry.state === 'failed') return;
    entry.state = 'failed';
    entry.fatalError = { code, message, at: this.#clock() };
  }

  /** The function process was replaced (after an invocation timeout); the generation lives on. */
  noteRestart(id: string): void {
    const entry = this.#byId.get(id);
    if (entry !== undefined) entry.restarts += 1;
  }

  /**
   * Removes a generation whose start failed, without remembering its attempt: nothing
   * ever served under it, so the same attempt may try again.
   */
  abandon(id: string): Registration | undefined {
    const entry = this.#byId.get(id);
    return entry === undefined ? undefined : snapshot(this.#remove(entry));
  }

  /** Releases a generation; idempotent (undefined when unknown). Its attempt may not register again. */
  unregister(id: string): Registration | undefined {
    const entry = this.#byId.get(id);
    if (entry === undefined) return undefined;
    this.#remove(entry);
    this.#released.delete(entry.runUid);
    this.#released.set(entry.runUid, entry.attempt);
    if (this.#released.size > this.#releasedCapacity) {
      const oldest = this.#released.keys().next();
      if (oldest.done !== true) this.#released.delete(oldest.value);
    }
    return snapshot(entry);
  }

  /**
   * Takes the single invocation slot. The start of an invocation is activity. There
   * is no queue: an overlapping invocation is refused at once (429 at the gateway).
   */
  beginInvocation(id: string, invocationId: string): InvocationSlot {
    const entry = this.#entry(id);
    switch (entry.state) {
      case 'starting':
        throw new KruntimesError('RunNotReady', `registration ${id} is still starting`);
      case 'failed':
        throw new KruntimesError('RegistrationLost', `registration ${id} failed: ${entry.fatalError?.message ?? 'unknown cause'}`);
      case 'ready':
        break;
    }
    if (entry.inFlight !== undefined) {
      throw new KruntimesError('InvocationInFlight', `invocation ${entry.inFlight} of run ${entry.runUid} is still in flight`);
    }
    entry.inFlight = invocationId;
    entry.invocations += 1;
    entry.lastActivity = this.#clock();
    return { registrationId: id, invocationId };
  }

  /** Frees the slot; the end of an invocation is activity. A no-op once the generation is gone. */
  endInvocation(slot: InvocationSlot): void {
    const entry = this.#byId.get(slot.registrationId);
    if (entry?.inFlight !== slot.invocationId) return;
    entry.inFlight = undefined;
    entry.lastActivity = this.#clock();
  }

  /** Every current generation (for shutdown and metrics). */
  list(): Registration[] {
    return [...this.#byId.values()].map(snapshot);
  }

  #entry(id: string): Entry {
    const entry = this.#byId.get(id);
    if (entry === undefined) {
      throw new KruntimesError('RegistrationNotFound', `registration ${id} is unknown, unregistered or superseded`);
    }
    return entry;
  }

  #remove(entry: Entry): Registration {
    this.#byId.delete(entry.id);
    if (this.#byRun.get(entry.runUid) === entry) this.#byRun.delete(entry.runUid);
    return snapshot(entry);
  }
}

function snapshot(entry: Entry): Registration {
  return { ...entry };
}
