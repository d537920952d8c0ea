import { Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '../../src/wait.ts';

export interface WatchEvent {
  type: string;
  object: { kind?: string; code?: number; reason?: string; metadata?: { name?: string; resourceVersion?: string } };
}

/** Records the events of one watch request; `ended` is set when the server closes it. */
export class RecordedWatch {
  readonly events: WatchEvent[] = [];
  ended: { error: unknown } | undefined;
  #controller: AbortController | undefined;

  static async start(config: KubeConfig, path: string, resourceVersion: string): Promise<RecordedWatch> {
    const recorded = new RecordedWatch();
    recorded.#controller = await new Watch(config).watch(
      path,
      { resourceVersion, allowWatchBookmarks: false },
      (type, object: WatchEvent['object']) => {
        recorded.events.push({ type, object });
      },
      (error: unknown) => {
        recorded.ended = { error };
      },
    );
    return recorded;
  }

  /** Waits (bounded) until the recorded events satisfy `done`. */
  async until(description: string, done: (events: readonly WatchEvent[]) => boolean, timeoutMs = 15_000): Promise<WatchEvent[]> {
    return waitFor(description, () => Promise.resolve(done(this.events) ? this.events : undefined), { timeoutMs, intervalMs: 20 });
  }

  stop(): void {
    this.#controller?.abort();
  }
}

/** `TYPE name` for each event, for readable assertions. */
export function summary(events: readonly WatchEvent[]): string[] {
  return events.map((e) => `${e.type} ${e.object.metadata?.name ?? e.object.reason ?? ''}`);
}
