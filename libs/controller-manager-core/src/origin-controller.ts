import type { PolicyRule } from '@kruntimes/api';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ORIGIN_LABEL, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Controller, InformerFactory, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReconcileResult, SharedInformer } from '@kruntimes/controller-runtime';
import { runClient } from '@kruntimes/run-client';
import type { ObjectClient } from '@kruntimes/run-client';
import { decideOrigin } from './decide-origin.ts';

type RunObject = Run & KubernetesObject;

/** What the origin controller does through the API: read labelled Runs, write their status. */
export const ORIGIN_CONTROLLER_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['update'] },
];

export interface OriginControllerOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
  /** Watch one namespace; all when undefined. */
  namespace?: string;
  logger: ControllerLogger;
  now?: () => number;
}

/**
 * The `run-origin` controller of the controller-manager (run it only while holding the
 * leader Lease): a Run that `krt sync` created from a local run (spec.origin, label
 * kruntimes.io/origin) goes from Pending straight to its recorded terminal phase, one
 * fenced status write (decideOrigin, run-state's RecordOrigin). The scheduler never binds
 * such a Run, so nothing else writes its status.
 */
export class OriginController {
  readonly #runClient: ObjectClient<Run>;
  readonly #runs: SharedInformer<RunObject>;
  readonly #informers: InformerFactory;
  readonly #ownsInformers: boolean;
  readonly #controller: Controller;
  readonly #logger: ControllerLogger;
  readonly #now: () => number;

  constructor(options: OriginControllerOptions) {
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#runClient = runClient(options.kubeConfig);
    this.#ownsInformers = options.informers === undefined;
    const informers = options.informers ?? new InformerFactory({ kubeConfig: options.kubeConfig, logger: options.logger });
    this.#informers = informers;
    this.#runs = informers.informer<RunObject>({
      group: API_GROUP,
      version: API_VERSION,
      namespace: options.namespace,
      plural: RUN_PLURAL,
      labelSelector: ORIGIN_LABEL,
      name: 'origin-runs',
    });
    this.#controller = new Controller({ name: 'run-origin', logger: options.logger, reconcile: (key) => this.reconcile(key) });
    this.#runs.enqueueTo((key) => {
      this.#controller.enqueue(key);
    });
  }

  /** Fills the cache (a shared one is synced already), then starts the controller. */
  async start(): Promise<void> {
    await this.#informers.start();
    this.#controller.start();
  }

  async stop(): Promise<void> {
    await this.#controller.stop();
    if (this.#ownsInformers) await this.#informers.stop();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const cached = this.#runs.get(name, namespace);
    if (cached === undefined) return undefined;
    const run = structuredClone(cached) as unknown as Run;
    const decision = decideOrigin(run, rfc3339(this.#now()));
    switch (decision.action) {
      case 'ignore':
        return undefined;
      case 'refused':
        // The spec cannot change (immutable origin): retrying would refuse again.
        this.#logger.error({ run: key, reason: decision.message }, 'the recorded result of a synced Run was refused');
        return undefined;
      case 'record':
        break;
    }
    // Fenced on the cached resourceVersion: a Run changed or gone since the cache showed it
    // is refused (Conflict, NotFound), and its watch event enqueues it again.
    const written = await this.#runClient.replaceStatus(run, decision.status);
    if (written.ok) this.#logger.debug({ run: key, phase: decision.status.phase }, 'recorded the result of a synced local run');
    return undefined;
  }
}

/** RFC 3339 in whole seconds, as metav1.Time serialises. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
