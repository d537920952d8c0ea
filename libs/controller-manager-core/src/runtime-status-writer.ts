import type { Runtime, RuntimeStatus } from '@kruntimes/api';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import type { ObjectClient } from '@kruntimes/run-client';

/**
 * Replaces a Runtime's status, fenced on the resourceVersion it was decided from. Two refusals are not errors:
 * - Conflict: decided from a cache older than the server; the newer version's watch event is on its way and enqueues the
 *   same key, which decides again from fresh data (a requeue with backoff would only add a second, slower retry);
 * - NotFound: the Runtime was deleted since the cache read; no status is left to keep, its delete event is on the way (the
 *   garbage collector deleting its objects enqueues it meanwhile, so this is common right after a deletion).
 */
export async function writeRuntimeStatus(
  runtimes: ObjectClient<Runtime>,
  logger: ControllerLogger,
  runtime: Runtime,
  status: RuntimeStatus,
): Promise<void> {
  const written = await runtimes.replaceStatus(runtime, status);
  if (written.ok) return;
  const { name = '', namespace = '' } = runtime.metadata;
  switch (written.reason) {
    case 'Conflict':
      logger.debug(
        { object: `Runtime ${namespace}/${name} status` },
        'write fenced out by a newer version; its watch event will reconcile again',
      );
      return;
    case 'NotFound':
      logger.debug({ runtime: `${namespace}/${name}` }, 'Runtime gone before its status write');
      return;
  }
}

/** RFC 3339 with whole seconds, as Kubernetes writes condition times. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
