import { Watch } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { System } from './system.ts';

/** Every reason each Run showed, in order; `errors` holds a watch that ended before `stop`. */
export interface ReasonHistory {
  reasons: Map<string, string[]>;
  errors: unknown[];
  stop(): void;
}

/**
 * Every reason each Run of the System's namespace showed, in order, on every version a watch
 * delivers (a poll would miss a reason that lasts a few milliseconds, like Drained before the
 * next bind). A watch that ends early is an error of the test.
 */
export async function observeReasons(system: System): Promise<ReasonHistory> {
  const reasons = new Map<string, string[]>();
  const errors: unknown[] = [];
  let stopped = false;
  const seen = (run: Run): void => {
    const name = run.metadata.name ?? '';
    const history = reasons.get(name) ?? [];
    const reason = run.status?.reason;
    if (reason !== undefined && history.at(-1) !== reason) history.push(reason);
    reasons.set(name, history);
  };
  // Without a resourceVersion the watch first sends every existing Run (ADDED), then the changes.
  const request = await new Watch(system.admin).watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${system.name}/${RUN_PLURAL}`,
    {},
    (_type: string, run: Run) => {
      seen(run);
    },
    (error: unknown) => {
      if (!stopped) errors.push(error ?? new Error('the watch of Runs ended'));
    },
  );
  return {
    reasons,
    errors,
    stop: () => {
      stopped = true;
      request.abort();
    },
  };
}

/** What a caller of one function got: the times of its 200s, the count of every other status, 503s without Retry-After. */
export interface InvokeLoopResult {
  oks: number[];
  others: Map<number, number>;
  unavailableWithoutRetryAfter: number;
}

/** Invokes a function Run through the gateway in a loop, as user `alice`, until stopped. */
export function invokeLoop(system: System, runtime: string, run: Run): { stop(): Promise<InvokeLoopResult> } {
  const result: InvokeLoopResult = { oks: [], others: new Map(), unavailableWithoutRetryAfter: 0 };
  const stopped = new AbortController();
  const done = (async () => {
    for (let n = 0; !stopped.signal.aborted; n += 1) {
      const answer = await system.invoke({
        runtime,
        uid: run.metadata.uid ?? '',
        token: system.token('alice'),
        body: `{"n":${String(n)}}`,
      });
      if (answer.status === 200) {
        result.oks.push(Date.now());
        continue;
      }
      result.others.set(answer.status, (result.others.get(answer.status) ?? 0) + 1);
      if (answer.status === 503 && answer.headers['retry-after'] !== '1') result.unavailableWithoutRetryAfter += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    stop: async () => {
      stopped.abort();
      await done;
      return result;
    },
  };
}

/** The longest time between two 200s (or from `from` to the first) after `from`. */
export function longestGapMs(times: readonly number[], from: number): number {
  let longest = 0;
  let previous = from;
  for (const time of times.filter((t) => t >= from)) {
    longest = Math.max(longest, time - previous);
    previous = time;
  }
  return longest;
}
