import { Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';

/**
 * Waits for the next change of the object `name` of the collection at `path` after
 * `resourceVersion` through a watch, at most `timeoutMs`: a wake-up for a loop that
 * re-reads the object. `ended` means the watch could not start or closed without an event
 * (the caller pauses before re-reading).
 */
export async function nextChange(
  config: KubeConfig,
  path: string,
  name: string,
  resourceVersion: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<'changed' | 'ended' | 'timeout'> {
  let settle: (how: 'changed' | 'ended' | 'timeout') => void = () => undefined;
  const outcome = new Promise<'changed' | 'ended' | 'timeout'>((resolve) => {
    settle = resolve;
  });
  const timer = setTimeout(() => {
    settle('timeout');
  }, timeoutMs);
  // Ctrl-C: the watch must not keep the process alive until its timeout.
  const abandon = (): void => {
    settle('ended');
  };
  if (signal?.aborted === true) abandon();
  else signal?.addEventListener('abort', abandon, { once: true });
  let controller: AbortController | undefined;
  try {
    controller = await new Watch(config).watch(
      path,
      // No resourceVersion: from the current state (nothing was read yet).
      { fieldSelector: `metadata.name=${name}`, ...(resourceVersion === '' ? {} : { resourceVersion }) },
      () => {
        settle('changed');
      },
      () => {
        settle('ended');
      },
    );
    return await outcome;
  } catch {
    // The caller re-reads the object, which reports a real failure (403, 404, unreachable).
    return 'ended';
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', abandon);
    controller?.abort();
  }
}
