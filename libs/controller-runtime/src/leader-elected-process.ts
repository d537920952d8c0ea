import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { stopOnSignals } from '@kruntimes/host';
import type { ControllerLogger } from './controller.ts';
import { LeaderElector } from './leader-election.ts';
import type { LeaderElectionOptions } from './leader-election.ts';

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
  // Resolves at once: the elector's run below is what ends once stopped.
  void stopOnSignals(logger, () => {
    state.stopping = true;
    elector.stop();
  });
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
