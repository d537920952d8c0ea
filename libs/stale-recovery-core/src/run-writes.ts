import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { transition } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';

/** Stale recovery's reads and writes of live Runs; every write is fenced on the read resourceVersion. */
export class RunWrites {
  readonly #custom: CustomObjectsApi;

  constructor(kubeConfig: KubeConfig) {
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
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
