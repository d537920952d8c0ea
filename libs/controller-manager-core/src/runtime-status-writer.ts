import { ApiException } from '@kubernetes/client-node';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Runtime, RuntimeStatus } from '@kruntimes/api';
import type { ControllerLogger } from '@kruntimes/controller-runtime';

/**
 * Replaces a Runtime's status, fenced on the resourceVersion it was decided from. Two answers are not errors:
 * - 409: decided from a cache older than the server; the newer version's watch event is on its way and enqueues the
 *   same key, which decides again from fresh data (a requeue with backoff would only add a second, slower retry);
 * - 404: the Runtime was deleted since the cache read; no status is left to keep, its delete event is on the way (the
 *   garbage collector deleting its objects enqueues it meanwhile, so this is common right after a deletion).
 */
export async function writeRuntimeStatus(
  custom: CustomObjectsApi,
  logger: ControllerLogger,
  runtime: Runtime,
  status: RuntimeStatus,
): Promise<void> {
  const { name = '', namespace = '', uid, resourceVersion } = runtime.metadata;
  try {
    await custom.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: RUNTIME_PLURAL,
      name,
      body: {
        apiVersion: runtime.apiVersion,
        kind: runtime.kind,
        metadata: { name, namespace, uid, resourceVersion },
        spec: runtime.spec,
        status,
      },
    });
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    if (error.code === 409) {
      logger.debug(
        { object: `Runtime ${namespace}/${name} status` },
        'write fenced out by a newer version; its watch event will reconcile again',
      );
      return;
    }
    if (error.code === 404) {
      logger.debug({ runtime: `${namespace}/${name}` }, 'Runtime gone before its status write');
      return;
    }
    throw error;
  }
}

/** RFC 3339 with whole seconds, as Kubernetes writes condition times. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
