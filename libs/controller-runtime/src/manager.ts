import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { stopOnSignals } from '@kruntimes/host';
import type { ControllerLogger } from './controller.ts';
import type { ManagerPhase } from './health.ts';
import { InformerFactory } from './informer-factory.ts';
import { LeaderElector } from './leader-election.ts';
import { LeaderElectionMetrics } from './leader-election-metrics.ts';
import { PooledKubeConfig } from './pooled-kube-config.ts';
import type { LeaderCallbacks, LeaderElectionOptions } from './leader-election.ts';

/**
 * A part of a process that the Manager starts and stops: a set of controllers, the
 * metrics endpoint. `start` resolves once it runs; `stop` is called once for every start
 * that was called, also when that start failed or has not finished, and undoes what it did.
 */
export interface Runnable {
  /** In log lines; default: the class's name. */
  readonly name?: string;
  /** False: runs on every replica from the start (the metrics endpoint). Default true: only while leading. */
  readonly needsLeaderElection?: boolean;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/** What the Manager needs of a leader elector (LeaderElector; a fake in tests). */
export interface Elector {
  run(callbacks: LeaderCallbacks): Promise<void>;
  stop(): void;
}

export interface ManagerLeaderElection extends Omit<LeaderElectionOptions, 'kubeConfig' | 'identity' | 'logger'> {
  /** In place of the LeaderElector the other fields describe (tests). */
  elector?: Elector;
}

export type ManagerLogger = ControllerLogger & { info(object: object, message: string): void };

export interface ManagerOptions {
  kubeConfig: KubeConfig;
  logger: ManagerLogger;
  /** The leader-elected work in log lines, e.g. `the scheduler`. */
  component: string;
  /** Campaign for this Lease before the leader-elected runnables start; without it they start at once. */
  leaderElection?: ManagerLeaderElection;
}

/**
 * The life of a controller process, after controller-runtime's (Go) Manager: one shared
 * informer factory, runnables added in order, started in that order and stopped in reverse.
 *
 * 1. The runnables that need no leader election (the metrics endpoint), in the order added.
 * 2. With leader election: campaigning under a unique identity until this process leads.
 * 3. Once leading: the shared informers, until all have synced, then the leader-elected
 *    runnables in the order added. Unlike Go's Manager, the caches start here and not
 *    before the campaign: a standby replica holds no watch, and what the informers'
 *    handlers record (stale-recovery's Lease observations) begins with the term.
 * 4. Until stopped (SIGTERM, SIGINT or `stop`), the Lease is lost, or a runnable fails to
 *    start. Then what was started stops in reverse order, the Lease is released (when
 *    stopped), and `run` resolves with the exit code: 0 when stopped, 1 when the Lease was
 *    lost or a start failed. Like kube-scheduler, a replica that lost the Lease exits and
 *    restarts as a candidate, so no state of its term survives into the next.
 */
export class Manager {
  /** Shared by every runnable of the process: one watch per (resource, namespace, selectors). */
  readonly informers: InformerFactory;
  /** The Lease renewals of this process: rendered beside the service's own metrics. */
  readonly leaderElectionMetrics = new LeaderElectionMetrics();
  readonly #logger: ManagerLogger;
  readonly #component: string;
  readonly #kubeConfig: KubeConfig;
  readonly #leaderElection: ManagerLeaderElection | undefined;
  readonly #runnables: Runnable[] = [];
  #running = false;
  #phase: ManagerPhase = 'starting';

  constructor(options: ManagerOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#logger = options.logger;
    this.#component = options.component;
    this.#leaderElection = options.leaderElection;
    this.informers = new InformerFactory({ kubeConfig: options.kubeConfig, logger: options.logger });
  }

  /** Where this process is in its life: what its health endpoint answers (decideReadiness). */
  get phase(): ManagerPhase {
    return this.#phase;
  }

  /** Adds a runnable; the Manager starts them in the order added (within their group). */
  add(runnable: Runnable): void {
    if (this.#running) throw new Error('Manager: add runnables before run');
    this.#runnables.push(runnable);
  }

  /** `run`, stopped by SIGTERM or SIGINT: the life of a service process. */
  runUntilSignalled(): Promise<number> {
    const stop = new AbortController();
    // Resolves only after a signal: `run` below is what ends.
    void stopOnSignals(this.#logger, () => {
      stop.abort();
    });
    return this.run(stop.signal);
  }

  /** Runs until `stop` aborts, the Lease is lost or a start fails; resolves with the exit code. */
  async run(stop: AbortSignal): Promise<number> {
    if (this.#running) throw new Error('Manager: run once');
    this.#running = true;
    const everyReplica = new RunnableGroup(this.#logger);
    const others = this.#runnables.filter((runnable) => runnable.needsLeaderElection === false);
    try {
      if ((await everyReplica.start(others, stop)) === 'failed') return 1;
      if (stop.aborted) return 0;
      return await this.#lead(stop);
    } finally {
      this.#phase = 'stopping';
      await everyReplica.stop();
    }
  }

  /** The leader-elected part: campaigns (when configured), runs one term, says how it ended. */
  async #lead(stop: AbortSignal): Promise<number> {
    const election = this.#leaderElection;
    if (election === undefined) return (await this.#runTerm(stop)) ? 0 : 1;
    const identity = `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
    const { elector: injected, ...lease } = election;
    const elector =
      injected ??
      new LeaderElector({
        ...lease,
        // Its own connection pool: while the controllers' requests hold every pooled
        // connection (hundreds of status writes), a renewal neither shares one nor opens a
        // new one (a TLS handshake with a loaded API server); renewing every retry period
        // keeps its own connection open.
        kubeConfig: PooledKubeConfig.separate(this.#kubeConfig),
        identity,
        logger: this.#logger,
        metrics: this.leaderElectionMetrics,
      });
    const onStop = (): void => {
      elector.stop();
    };
    stop.addEventListener('abort', onStop, { once: true });
    // An object, not a let: the flag flips in the leading callback while run() awaits.
    const term = { failed: false };
    this.#logger.info({ identity }, `campaigning for the ${election.leaseName} lease`);
    this.#phase = 'standby';
    try {
      await elector.run({
        onStartedLeading: async (signal) => {
          this.#logger.info({ identity }, `leading: starting ${this.#component}`);
          if (await this.#runTerm(signal)) return;
          term.failed = true;
          // Stopped already; the elector now releases the Lease for another replica.
          elector.stop();
        },
      });
    } finally {
      stop.removeEventListener('abort', onStop);
    }
    if (term.failed) return 1;
    if (stop.aborted) return 0;
    this.#logger.error({ identity }, `lost the ${election.leaseName} lease; exiting`);
    return 1;
  }

  /**
   * One term: the informers, then the leader-elected runnables, until `term` ends (then
   * stopped in reverse, also while one is still starting) or a start fails (stopped at
   * once). False when a start failed.
   */
  async #runTerm(term: AbortSignal): Promise<boolean> {
    const informers: Runnable = {
      name: 'informers',
      start: () => this.informers.start(),
      stop: () => this.informers.stop(),
    };
    const leaderElected = this.#runnables.filter((runnable) => runnable.needsLeaderElection !== false);
    const group = new RunnableGroup(this.#logger);
    this.#phase = 'syncing';
    const started = await group.start([informers, ...leaderElected], term);
    if (started === 'started') this.#phase = 'running';
    if (started !== 'failed') await aborted(term);
    this.#phase = 'stopping';
    await group.stop();
    return started !== 'failed';
  }
}

/** Runnables started in order and stopped in reverse. */
class RunnableGroup {
  readonly #logger: ManagerLogger;
  /** Each runnable whose start was called, in that order. */
  readonly #started: Runnable[] = [];

  constructor(logger: ManagerLogger) {
    this.#logger = logger;
  }

  /** Starts each in turn; stops starting when `until` aborts (even mid-start) or one fails. */
  async start(runnables: readonly Runnable[], until: AbortSignal): Promise<'started' | 'interrupted' | 'failed'> {
    const interrupted = aborted(until).then(() => 'interrupted' as const);
    for (const runnable of runnables) {
      if (until.aborted) return 'interrupted';
      this.#started.push(runnable);
      const starting = Promise.resolve().then(() => runnable.start());
      let outcome: 'started' | 'interrupted';
      try {
        outcome = await Promise.race([starting.then(() => 'started' as const), interrupted]);
      } catch (error) {
        this.#logger.error({ err: error, runnable: nameOf(runnable) }, `${nameOf(runnable)} failed to start; stopping`);
        return 'failed';
      }
      if (outcome === 'interrupted') {
        // Its start goes on while it is stopped: a failure then is only worth a line.
        starting.catch((error: unknown) => {
          this.#logger.error({ err: error, runnable: nameOf(runnable) }, `${nameOf(runnable)} failed to start`);
        });
        return 'interrupted';
      }
    }
    return 'started';
  }

  /** Stops every runnable whose start was called, last first; a failing stop does not keep the others running. */
  async stop(): Promise<void> {
    for (const runnable of this.#started.splice(0).reverse()) {
      try {
        await runnable.stop();
      } catch (error) {
        this.#logger.error({ err: error, runnable: nameOf(runnable) }, `${nameOf(runnable)} failed to stop`);
      }
    }
  }
}

function nameOf(runnable: Runnable): string {
  return runnable.name ?? runnable.constructor.name;
}

/** Resolves when `signal` aborts (at once when it has). */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else
      signal.addEventListener(
        'abort',
        () => {
          resolve();
        },
        { once: true },
      );
  });
}
