import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { transition } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';

/** Stale recovery's reads and writes of live Runs; every write is fenced on the read resourceVersion. */
export class RunWrites {
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
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
    try {
      return (await this.#custom.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: RUN_PLURAL,
        name,
      })) as Run;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  async transition(live: Run, event: RunEvent, nowMs: number): Promise<void> {
    const result = transition({ run: live, event, writer: 'stale-recovery', now: new Date(nowMs).toISOString() });
    // decideRecovery chose the event from this very object: a refusal is a bug, not a race.
    if (!result.ok) throw result.error;
    const { name = '', namespace = '' } = live.metadata;
    // The live object's resourceVersion fences the write: a Run changed since it was read gets 409.
    await this.#custom.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: RUN_PLURAL,
      name,
      body: { ...live, status: result.status },
    });
  }

  /** JSON patch that carries the read resourceVersion: the API server answers 409 if the Run changed since. */
  async removeFinalizer(live: Run): Promise<void> {
    const { name = '', namespace = '', uid, resourceVersion } = live.metadata;
    const finalizers = (live.metadata.finalizers ?? []).filter((f) => f !== REGISTRATION_CLEANUP_FINALIZER);
    await this.#custom.patchNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: RUN_PLURAL,
      name,
      body: [
        { op: 'test', path: '/metadata/uid', value: uid },
        { op: 'replace', path: '/metadata/resourceVersion', value: resourceVersion },
        { op: 'replace', path: '/metadata/finalizers', value: finalizers },
      ],
    });
  }
}
