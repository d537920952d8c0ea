import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ApiException, CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import type { KubeConfig, V1Lease, V1LeaseSpec } from '@kubernetes/client-node';
import type { ControllerLogger } from './controller.ts';

export interface LeaderElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Name of the Lease, one per leader-elected component. */
  leaseName: string;
  /** Unique per process, e.g. the Pod name plus a random suffix. */
  identity: string;
  logger: ControllerLogger;
  leaseDurationSeconds?: number;
  /** A leader that cannot renew for this long stops leading (must be < lease duration). */
  renewDeadlineSeconds?: number;
  retryPeriodSeconds?: number;
}

export interface LeaderCallbacks {
  /** Start the leader's work; `signal` aborts when leadership is lost or released. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  onStoppedLeading?(): void;
}

/**
 * Lease-based leader election with client-go's rules: a candidate takes the Lease only
 * when it is free or when its record has not changed for a full lease duration *as
 * observed locally*, so clocks of different machines are never compared. Writes carry
 * the resourceVersion, so two candidates can never both win one round.
 */
export class LeaderElector {
  readonly #options: Required<Omit<LeaderElectionOptions, 'kubeConfig' | 'logger'>> & Pick<LeaderElectionOptions, 'logger'>;
  readonly #api: CoordinationV1Api;
  #observed: { record: string; at: number } | undefined;
  /** Holder of the Lease as last read or written. */
  #holder: string | undefined;
  readonly #stopRequested = new AbortController();
  #leading: AbortController | undefined;

  constructor(options: LeaderElectionOptions) {
    const leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    const renewDeadlineSeconds = options.renewDeadlineSeconds ?? 10;
    if (renewDeadlineSeconds >= leaseDurationSeconds)
      throw new RangeError('renewDeadlineSeconds must be shorter than leaseDurationSeconds');
    this.#options = {
      namespace: options.namespace,
      leaseName: options.leaseName,
      identity: options.identity,
      logger: options.logger,
      leaseDurationSeconds,
      renewDeadlineSeconds,
      retryPeriodSeconds: options.retryPeriodSeconds ?? 2,
    };
    this.#api = options.kubeConfig.makeApiClient(CoordinationV1Api);
  }

  get isLeader(): boolean {
    return this.#leading !== undefined && !this.#leading.signal.aborted;
  }

  /** Campaigns until it leads, leads until it loses the Lease or `stop` is called. */
  async run(callbacks: LeaderCallbacks): Promise<void> {
    const stop = this.#stopRequested.signal;
    while (!this.#stopping()) {
      if (!(await this.#tryAcquireOrRenew())) {
        await sleep(this.#options.retryPeriodSeconds * 1000, stop);
        continue;
      }
      this.#leading = new AbortController();
      this.#options.logger.debug({ lease: this.#options.leaseName, identity: this.#options.identity }, 'started leading');
      const work = Promise.resolve(callbacks.onStartedLeading(this.#leading.signal));
      await this.#renewUntilLost(stop);
      this.#leading.abort();
      await work.catch((error: unknown) => {
        this.#options.logger.error({ err: error }, 'leader work failed');
      });
      callbacks.onStoppedLeading?.();
      if (this.#stopping()) await this.#release();
      return;
    }
  }

  /** A method, not `signal.aborted` inline: the flag flips while the loops await. */
  #stopping(): boolean {
    return this.#stopRequested.signal.aborted;
  }

  /** Stops campaigning or leading and releases the Lease if held. */
  stop(): void {
    this.#stopRequested.abort();
  }

  async #renewUntilLost(stop: AbortSignal): Promise<void> {
    let lastRenew = Date.now();
    while (!this.#stopping()) {
      await sleep(this.#options.retryPeriodSeconds * 1000, stop);
      if (this.#stopping()) return;
      if (await this.#tryAcquireOrRenew()) {
        lastRenew = Date.now();
      } else if (Date.now() - lastRenew > this.#options.renewDeadlineSeconds * 1000 || this.#holder !== this.#options.identity) {
        this.#options.logger.error({ lease: this.#options.leaseName, identity: this.#options.identity }, 'lost leadership');
        return;
      }
    }
  }

  /** One round: create, renew, or take over an expired Lease. False when someone else holds it. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, leaseName, identity, leaseDurationSeconds } = this.#options;
    // Lease times are MicroTime: a plain Date serialises with milliseconds, which the API server refuses.
    const now = new V1MicroTime();
    let lease: V1Lease;
    try {
      lease = await this.#api.readNamespacedLease({ name: leaseName, namespace });
    } catch (error) {
      if (!(error instanceof ApiException) || error.code !== 404) return this.#roundFailed(error);
      try {
        await this.#api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name: leaseName, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
          },
        });
        this.#holder = identity;
        return true;
      } catch (createError) {
        return this.#roundFailed(createError);
      }
    }

    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseTransitions]);
    if (this.#observed?.record !== record) this.#observed = { record, at: Date.now() };
    this.#holder = spec.holderIdentity ?? undefined;
    const held = spec.holderIdentity !== undefined && spec.holderIdentity !== '';
    const expired = Date.now() - this.#observed.at > (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    const mine = spec.holderIdentity === identity;
    if (held && !mine && !expired) return false;

    const next = leaseUpdate(lease, {
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: now,
      acquireTime: mine ? (spec.acquireTime ?? now) : now,
      leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    });
    try {
      await this.#api.replaceNamespacedLease({ name: leaseName, namespace, body: next });
      this.#holder = identity;
      return true;
    } catch (error) {
      return this.#roundFailed(error);
    }
  }

  #roundFailed(error: unknown): false {
    // 409: another candidate wrote first; anything else: the API server is unreachable.
    // Either way this round is lost and the next one decides.
    const conflict = error instanceof ApiException && error.code === 409;
    if (!conflict) this.#options.logger.error({ err: error, lease: this.#options.leaseName }, 'leader election round failed');
    return false;
  }

  async #release(): Promise<void> {
    const { namespace, leaseName, identity } = this.#options;
    try {
      const lease = await this.#api.readNamespacedLease({ name: leaseName, namespace });
      if (lease.spec?.holderIdentity !== identity) return;
      await this.#api.replaceNamespacedLease({
        name: leaseName,
        namespace,
        body: leaseUpdate(lease, {
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: new V1MicroTime(),
          leaseTransitions: lease.spec.leaseTransitions ?? 0,
        }),
      });
    } catch (error) {
      // Not releasing only delays the next leader by one lease duration.
      this.#options.logger.error({ err: error, lease: leaseName }, 'could not release the lease');
    }
  }
}

/** What a leader-elected process runs during its term. */
export interface LeaderComponent {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs `component` for exactly one leadership term: started when the term begins, stopped
 * when `signal` (from onStartedLeading) says it ended, even while start is still syncing.
 */
export async function runWhileLeading(signal: AbortSignal, component: LeaderComponent): Promise<void> {
  const termEnded = new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener(
      'abort',
      () => {
        resolve();
      },
      { once: true },
    );
  });
  await Promise.race([component.start(), termEnded]);
  await termEnded;
  await component.stop();
}

/** The Lease with a new spec, keeping its resourceVersion so that the write is fenced. */
function leaseUpdate(lease: V1Lease, spec: V1LeaseSpec): V1Lease {
  return { metadata: lease.metadata ?? {}, spec };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export interface LeaderElectedProcessOptions extends Omit<LeaderElectionOptions, 'identity' | 'logger'> {
  /** The service's name in log lines, e.g. `the scheduler`. */
  component: string;
  logger: ControllerLogger & { info(object: object, message: string): void };
  /** Builds a fresh component for each leadership term. */
  create: () => LeaderComponent;
}

/**
 * The life of a leader-elected service process (scheduler, stale-recovery,
 * controller-manager): campaigns under a unique identity, runs a fresh component for the
 * term it leads, and stops on SIGTERM or SIGINT. Resolves with the process's exit code:
 * 0 after a signal, 1 when the Lease was lost. Like kube-scheduler, a replica that lost
 * the Lease exits and restarts as a candidate, so no state of its term survives into the next.
 */
export async function runLeaderElectedProcess(options: LeaderElectedProcessOptions): Promise<number> {
  const { component, logger, create, ...election } = options;
  const identity = `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
  const elector = new LeaderElector({ ...election, identity, logger });
  // An object, not a let: the flag flips in a signal handler while run() awaits.
  const state = { stopping: false };
  const stop = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'shutting down');
    state.stopping = true;
    elector.stop();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  logger.info({ identity }, `campaigning for the ${options.leaseName} lease`);
  await elector.run({
    onStartedLeading: async (signal) => {
      logger.info({ identity }, `leading: starting ${component}`);
      await runWhileLeading(signal, create());
    },
  });
  if (!state.stopping) logger.error({ identity }, `lost the ${options.leaseName} lease; exiting`);
  return state.stopping ? 0 : 1;
}
