import { ApiException, CoordinationV1Api, Observable, V1MicroTime } from '@kubernetes/client-node';
import type { ConfigurationOptions, KubeConfig, RequestContext, ResponseContext, V1Lease } from '@kubernetes/client-node';
import type { ControllerLogger } from './controller.ts';
import { LeaderElectionMetrics } from './leader-election-metrics.ts';
import { decideLeaseRound } from './lease-round.ts';
import type { LeaseObservation } from './lease-round.ts';
import { systemMonotonicClock } from './monotonic-clock.ts';
import type { MonotonicClock } from './monotonic-clock.ts';

export type ElectorLogger = ControllerLogger & { warn?(object: object, message: string): void };

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Name of the Lease, one per leader-elected component. */
  leaseName: string;
  /** Unique per process, e.g. the Pod name plus a random suffix. */
  identity: string;
  /** `warn` (pino's) for slow renewals when it has one, else `error`. */
  logger: ElectorLogger;
  /** How long candidates wait for a holder that stopped renewing. Default 15. */
  leaseDurationSeconds?: number;
  /**
   * A leader whose renewals have not succeeded for this long stops leading, measured from
   * the start of the last successful one (must be < lease duration). Default 10.
   */
  renewDeadlineSeconds?: number;
  /** Between rounds (must be < renew deadline). Default 2. */
  retryPeriodSeconds?: number;
  /** Monotonic time and sleeps; the system's by default. */
  clock?: MonotonicClock;
  /** Where renewal rounds are measured; a private one by default. */
  metrics?: LeaderElectionMetrics;
}

export interface LeaderCallbacks {
  /** Start the leader's work; `signal` aborts when leadership is lost or released. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  onStoppedLeading?(): void;
}

type RoundOutcome = 'leading' | 'heldByOther' | 'failed';

/**
 * Lease-based leader election with client-go's rules: a candidate takes the Lease only
 * when it is free or when its record has not changed for a full lease duration *as
 * observed locally* (decideLeaseRound), so clocks of different machines are never
 * compared. Writes carry the resourceVersion, so two candidates can never both win one
 * round. A leader stops leading at the latest one renew deadline after the start of its
 * last successful renewal, even while a Lease request still hangs: that is before any
 * candidate can see its Lease expire.
 */
export class LeaderElector {
  readonly #api: CoordinationV1Api;
  readonly #clock: MonotonicClock;
  readonly #logger: ElectorLogger;
  readonly #lease: { namespace: string; name: string; identity: string; leaseDurationSeconds: number };
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #metrics: LeaderElectionMetrics;
  #observed: LeaseObservation | undefined;
  readonly #stopRequested = new AbortController();
  #leading: AbortController | undefined;

  constructor(options: LeaderElectionOptions) {
    const leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    const renewDeadlineSeconds = options.renewDeadlineSeconds ?? 10;
    const retryPeriodSeconds = options.retryPeriodSeconds ?? 2;
    if (renewDeadlineSeconds >= leaseDurationSeconds)
      throw new RangeError('renewDeadlineSeconds must be shorter than leaseDurationSeconds');
    if (retryPeriodSeconds >= renewDeadlineSeconds) throw new RangeError('retryPeriodSeconds must be shorter than renewDeadlineSeconds');
    this.#api = options.kubeConfig.makeApiClient(CoordinationV1Api);
    this.#metrics = options.metrics ?? new LeaderElectionMetrics();
    this.#clock = options.clock ?? systemMonotonicClock;
    this.#logger = options.logger;
    this.#lease = { namespace: options.namespace, name: options.leaseName, identity: options.identity, leaseDurationSeconds };
    this.#renewDeadlineMs = renewDeadlineSeconds * 1000;
    this.#retryPeriodMs = retryPeriodSeconds * 1000;
  }

  get isLeader(): boolean {
    return this.#leading !== undefined && !this.#leading.signal.aborted;
  }

  /** Campaigns until it leads, leads until it loses the Lease or `stop` is called. */
  async run(callbacks: LeaderCallbacks): Promise<void> {
    const acquiredAtMs = await this.#campaign();
    if (acquiredAtMs === undefined) return;
    const leading = new AbortController();
    this.#leading = leading;
    this.#metrics.leading = true;
    this.#logger.debug({ lease: this.#lease.name, identity: this.#lease.identity }, 'started leading');
    const work = Promise.resolve(callbacks.onStartedLeading(leading.signal));
    await this.#renewUntilLost(leading, acquiredAtMs);
    leading.abort();
    this.#metrics.leading = false;
    await work.catch((error: unknown) => {
      this.#logger.error({ err: error }, 'leader work failed');
    });
    callbacks.onStoppedLeading?.();
    if (this.#stopping()) await this.#release();
  }

  /** Stops campaigning or leading and releases the Lease if held. */
  stop(): void {
    this.#stopRequested.abort();
  }

  /** A method, not `signal.aborted` inline: the flag flips while the loops await. */
  #stopping(): boolean {
    return this.#stopRequested.signal.aborted;
  }

  /** Rounds until one takes the Lease: resolves with when that round started, or undefined once stopped. */
  async #campaign(): Promise<number | undefined> {
    while (!this.#stopping()) {
      const startedMs = this.#clock.now();
      if ((await this.#boundedRound(startedMs + this.#renewDeadlineMs)) === 'leading') return startedMs;
      await this.#clock.sleep(this.#retryPeriodMs, this.#stopRequested.signal);
    }
    return undefined;
  }

  /** Renews every retry period until another candidate holds the Lease, the renew deadline passes, or stop. */
  async #renewUntilLost(leading: AbortController, acquiredAtMs: number): Promise<void> {
    let renewedAtMs = acquiredAtMs;
    while (!this.#stopping()) {
      const deadlineMs = renewedAtMs + this.#renewDeadlineMs;
      const sleepMs = Math.max(0, Math.min(this.#retryPeriodMs, deadlineMs - this.#clock.now()));
      const dueMs = this.#clock.now() + sleepMs;
      await this.#clock.sleep(sleepMs, this.#stopRequested.signal);
      if (this.#stopping()) return;
      const startedMs = this.#clock.now();
      const outcome = startedMs >= deadlineMs ? 'failed' : await this.#boundedRound(deadlineMs, leading);
      this.#measured(startedMs - dueMs, this.#clock.now() - startedMs, outcome, deadlineMs - startedMs);
      if (outcome === 'leading') {
        renewedAtMs = startedMs;
      } else if (outcome === 'heldByOther' || leading.signal.aborted || this.#clock.now() >= deadlineMs) {
        if (this.#stopping()) return;
        const reason = outcome === 'heldByOther' ? 'another candidate holds the lease' : 'renew deadline passed';
        this.#logger.error({ lease: this.#lease.name, identity: this.#lease.identity, reason }, 'lost leadership');
        return;
      }
    }
  }

  /**
   * Records one renewal round. A round that started late or took long is also logged,
   * with how much of the renew deadline was left: losing the Lease under load is
   * diagnosed from these lines (a late start is this process's event loop; a slow
   * answer the API server or the path to it).
   */
  #measured(latenessMs: number, durationMs: number, outcome: RoundOutcome, leftMs: number): void {
    this.#metrics.lateness.observe(Math.max(0, latenessMs) / 1000);
    this.#metrics.renew.observe(durationMs / 1000);
    if (outcome !== 'leading') this.#metrics.renewFailures += 1;
    if (latenessMs + durationMs <= this.#retryPeriodMs) return;
    const fields = {
      lease: this.#lease.name,
      latenessMs: Math.round(latenessMs),
      durationMs: Math.round(durationMs),
      deadlineLeftMs: Math.round(leftMs),
      outcome,
    };
    if (this.#logger.warn === undefined) this.#logger.error(fields, 'slow lease renewal');
    else this.#logger.warn(fields, 'slow lease renewal');
  }

  /**
   * One round whose requests are aborted by stop or at `deadlineMs`. At the deadline the
   * leader's work is told first (`leading`), then the request still in flight is aborted,
   * so a hung write never extends a term.
   */
  async #boundedRound(deadlineMs: number, leading?: AbortController): Promise<RoundOutcome> {
    const deadline = this.#timer(deadlineMs - this.#clock.now(), () => leading?.abort());
    try {
      return await this.#round(AbortSignal.any([deadline.signal, this.#stopRequested.signal]));
    } finally {
      deadline.cancel();
    }
  }

  /** A signal that aborts `ms` from now by the clock, after `onDeadline` ran; `cancel` disarms it. */
  #timer(ms: number, onDeadline: () => void = () => undefined): { signal: AbortSignal; cancel: () => void } {
    const expired = new AbortController();
    const cancelled = new AbortController();
    void this.#clock.sleep(ms, cancelled.signal).then(() => {
      if (cancelled.signal.aborted) return;
      onDeadline();
      expired.abort();
    });
    return {
      signal: expired.signal,
      cancel: () => {
        cancelled.abort();
      },
    };
  }

  /** Reads the Lease, lets decideLeaseRound choose, and writes what it chose. */
  async #round(signal: AbortSignal): Promise<RoundOutcome> {
    const { namespace, name, identity, leaseDurationSeconds } = this.#lease;
    const options = abortedBy(signal);
    let lease: V1Lease | undefined;
    try {
      lease = await this.#api.readNamespacedLease({ name, namespace }, options);
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) return this.#roundFailed(error, signal);
    }
    const { action, observed } = decideLeaseRound({
      identity,
      leaseDurationSeconds,
      current: lease?.spec,
      observed: this.#observed,
      nowMs: this.#clock.now(),
      // MicroTime: a plain Date serialises with milliseconds, which the API server refuses.
      writeTime: new V1MicroTime(),
    });
    this.#observed = observed;
    try {
      switch (action.type) {
        case 'wait':
          return 'heldByOther';
        case 'create':
          await this.#api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: action.spec } }, options);
          return 'leading';
        case 'acquire':
        case 'renew':
          // The Lease as read, new spec: its resourceVersion fences the write.
          await this.#api.replaceNamespacedLease(
            { name, namespace, body: { metadata: lease?.metadata ?? {}, spec: action.spec } },
            options,
          );
          if (action.type === 'acquire') this.#logger.debug({ lease: name, identity, from: action.from }, 'acquired the lease');
          return 'leading';
      }
    } catch (error) {
      return this.#roundFailed(error, signal);
    }
  }

  #roundFailed(error: unknown, signal: AbortSignal): 'failed' {
    // 409: another candidate wrote first; aborted: stop or the deadline, reported by the
    // caller; anything else: the API server is unreachable. Either way the next round decides.
    const conflict = error instanceof ApiException && error.code === 409;
    if (!conflict && !signal.aborted) this.#logger.error({ err: error, lease: this.#lease.name }, 'leader election round failed');
    return 'failed';
  }

  /** Hands the Lease over at once instead of after a lease duration; bounded by the renew deadline. */
  async #release(): Promise<void> {
    const { namespace, name, identity } = this.#lease;
    const deadline = this.#timer(this.#renewDeadlineMs);
    const options = abortedBy(deadline.signal);
    try {
      const lease = await this.#api.readNamespacedLease({ name, namespace }, options);
      if (lease.spec?.holderIdentity !== identity) return;
      const spec = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        renewTime: new V1MicroTime(),
        leaseTransitions: lease.spec.leaseTransitions ?? 0,
      };
      await this.#api.replaceNamespacedLease({ name, namespace, body: { metadata: lease.metadata ?? {}, spec } }, options);
    } catch (error) {
      // Not releasing only delays the next leader by one lease duration.
      this.#logger.error({ err: error, lease: name }, 'could not release the lease');
    } finally {
      deadline.cancel();
    }
  }
}

/** Per-request options that abort the request with `signal` (client-node has no signal parameter). */
function abortedBy(signal: AbortSignal): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (context: RequestContext) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
