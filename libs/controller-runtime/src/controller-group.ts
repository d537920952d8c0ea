import type { KubeConfig } from '@kubernetes/client-node';
import type { ControllerLogger } from './controller.ts';
import { InformerFactory } from './informer-factory.ts';

/** What a group starts after its caches synced and stops before them: a Controller, or anything run like one. */
export interface Worker {
  start(): void;
  stop(): Promise<void>;
}

export interface ControllerGroupOptions {
  kubeConfig: KubeConfig;
  logger: ControllerLogger;
  /** The Manager's shared informers, which it starts first and stops last; default: the group's own, started and stopped with it. */
  informers?: InformerFactory | undefined;
}

/**
 * The informers a component reads and the workers that read them, started and stopped in
 * the one safe order: every cache synced before any worker starts (a first reconcile sees
 * complete caches), every worker stopped before the caches. Informers of its own it stops;
 * shared ones are the Manager's, which stops them after every component.
 */
export class ControllerGroup {
  readonly informers: InformerFactory;
  readonly #ownsInformers: boolean;
  readonly #workers: Worker[] = [];

  constructor(options: ControllerGroupOptions) {
    this.#ownsInformers = options.informers === undefined;
    this.informers = options.informers ?? new InformerFactory({ kubeConfig: options.kubeConfig, logger: options.logger });
  }

  /** Workers started in this order, stopped together. */
  add(...workers: Worker[]): void {
    this.#workers.push(...workers);
  }

  /** Fills the caches (shared ones are synced already), then starts the workers. */
  async start(): Promise<void> {
    await this.informers.start();
    for (const worker of this.#workers) worker.start();
  }

  /** Stops the workers, then `drained` (what they left running), then the group's own informers. */
  async stop(drained?: () => Promise<unknown>): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.stop()));
    await drained?.();
    if (this.#ownsInformers) await this.informers.stop();
  }
}
