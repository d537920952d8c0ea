import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { runClient, writeTransition } from '@kruntimes/run-client';
import type { ObjectApi, WriteResult } from '@kruntimes/run-client';
import type { RunEvent } from '@kruntimes/run-state';

/** The calls RunWrites makes: the Run client's reads and writes, and the one CoreV1Api read. */
export interface RunWritesClients {
  runs: Pick<ObjectApi<Run>, 'get' | 'replaceStatus' | 'mergePatch'>;
  core: Pick<CoreV1Api, 'readNamespace'>;
}

/** RunWrites against the API server of `kubeConfig`. */
export function runWrites(kubeConfig: KubeConfig): RunWrites {
  return new RunWrites({ runs: runClient(kubeConfig), core: kubeConfig.makeApiClient(CoreV1Api) });
}

/**
 * Stale recovery's reads and writes of live Runs; every write is fenced on the read
 * resourceVersion and returns NotFound and Conflict as values (no retry here: the
 * reconcile looks again).
 */
export class RunWrites {
  readonly #runs: RunWritesClients['runs'];
  readonly #core: RunWritesClients['core'];

  constructor(clients: RunWritesClients) {
    this.#runs = clients.runs;
    this.#core = clients.core;
  }

  /**
   * The namespace's annotations, read live: only when a lost owner's task would be retried
   * (one GET per such recovery, never per reconcile), so that an annotation set a moment
   * ago counts. An error is thrown (the reconcile is retried): a policy that could not be
   * read never allows a retry by default.
   */
  async namespaceAnnotations(namespace: string): Promise<Record<string, string> | undefined> {
    const object = await this.#core.readNamespace({ name: namespace });
    return object.metadata?.annotations;
  }

  /** The live Run, or undefined when it is gone. */
  async live(namespace: string, name: string): Promise<Run | undefined> {
    return this.#runs.get(namespace, name);
  }

  async transition(live: Run, event: RunEvent, nowMs: number): Promise<WriteResult<Run>> {
    const result = await writeTransition(this.#runs, live, event, { writer: 'stale-recovery', now: () => new Date(nowMs).toISOString() });
    // decideRecovery chose the event from this very object: a refusal is a bug, not a race.
    if (!result.ok && result.reason === 'Refused') throw result.error;
    return result;
  }

  /** A merge patch that carries the read resourceVersion: Conflict if the Run changed since. */
  async removeFinalizer(live: Run): Promise<WriteResult<Run>> {
    const { name = '', namespace = '', uid, resourceVersion = '' } = live.metadata;
    const finalizers = (live.metadata.finalizers ?? []).filter((f) => f !== REGISTRATION_CLEANUP_FINALIZER);
    return this.#runs.mergePatch(namespace, name, { metadata: { ...(uid === undefined ? {} : { uid }), resourceVersion, finalizers } });
  }
}
