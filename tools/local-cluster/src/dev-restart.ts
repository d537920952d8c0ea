// `dev up` restarts a service that exits, as its Deployment would, and stops the environment
// only when one keeps failing (a crash loop).
import type { Running, Say } from './dev-components.ts';

export interface RestartPolicy {
  /** Before the first restart; doubled for each exit within the window. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** This many exits within `crashLoopWindowMs` (the last one included) stop the environment. */
  crashLoopExits: number;
  crashLoopWindowMs: number;
}

/** Like the kubelet's back-off (10 s doubling to 5 min), shortened for a machine at hand. */
export const DEV_RESTART_POLICY: RestartPolicy = {
  initialBackoffMs: 1_000,
  maxBackoffMs: 30_000,
  crashLoopExits: 5,
  crashLoopWindowMs: 120_000,
};

export type RestartDecision = { action: 'restart'; delayMs: number; recentExits: number } | { action: 'stop'; recentExits: number };

/**
 * What to do after a service exited at `nowMs`, given the times of its exits so far (this
 * one included): restart it after a back-off that doubles with each exit in the window,
 * or stop the environment once it exited `crashLoopExits` times within the window.
 */
export function decideRestart(exitTimesMs: readonly number[], nowMs: number, policy: RestartPolicy = DEV_RESTART_POLICY): RestartDecision {
  const recentExits = exitTimesMs.filter((at) => nowMs - at < policy.crashLoopWindowMs).length;
  if (recentExits >= policy.crashLoopExits) return { action: 'stop', recentExits };
  const delayMs = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** Math.max(0, recentExits - 1));
  return { action: 'restart', delayMs, recentExits };
}

/** `exit code 1`, `signal SIGKILL`. */
export function describeExit(code: number | null | undefined, signal: string | null | undefined): string {
  if (signal !== null && signal !== undefined) return `signal ${signal}`;
  return `exit code ${String(code)}`;
}

/**
 * Watches the services it is given and restarts each one that exits (`respawn`, with the
 * same arguments and log) after DEV_RESTART_POLICY's back-off, each step said. `crashLoop`
 * resolves with the message when one keeps failing; `stop` (at the teardown) ends every
 * watch, so the exits of the teardown restart nothing.
 */
export class ServiceRestarts {
  readonly #say: Say;
  readonly #replaced: (old: Running, fresh: Running) => Promise<void>;
  readonly #policy: RestartPolicy;
  readonly #now: () => number;
  readonly #stopped = new AbortController();
  readonly #names = new Set<string>();
  #failure: string | undefined;
  #onCrashLoop: (message: string) => void = () => undefined;
  /** Resolves with what to report when a service is in a crash loop. */
  readonly crashLoop: Promise<string>;

  constructor(
    say: Say,
    replaced: (old: Running, fresh: Running) => Promise<void>,
    policy: RestartPolicy = DEV_RESTART_POLICY,
    now: () => number = () => performance.now(),
  ) {
    this.#say = say;
    this.#replaced = replaced;
    this.#policy = policy;
    this.#now = now;
    this.crashLoop = new Promise((resolve) => {
      this.#onCrashLoop = resolve;
    });
  }

  /** Set once a service is in a crash loop: the environment is to stop. */
  get failure(): string | undefined {
    return this.#failure;
  }

  /** Whether `name` is restarted here (its exit alone does not stop the environment). */
  restarts(name: string): boolean {
    return this.#names.has(name);
  }

  watch(component: Running, respawn: () => Running): void {
    this.#names.add(component.name);
    void this.#watch(component, respawn);
  }

  stop(): void {
    this.#stopped.abort();
  }

  /** A method, not `signal.aborted` inline: the flag flips while the watches await. */
  #isStopped(): boolean {
    return this.#stopped.signal.aborted;
  }

  async #watch(first: Running, respawn: () => Running): Promise<void> {
    const exits: number[] = [];
    let current = first;
    const stopped = this.#stopped.signal;
    for (;;) {
      await Promise.race([current.exited, aborted(stopped)]);
      if (this.#isStopped()) return;
      const nowMs = this.#now();
      exits.push(nowMs);
      const how = describeExit(current.exitCode, current.exitSignal);
      const decision = decideRestart(exits, nowMs, this.#policy);
      if (decision.action === 'stop') {
        const minutes = this.#policy.crashLoopWindowMs / 60_000;
        this.#failure = `${current.name} keeps failing: ${String(decision.recentExits)} exits within ${String(minutes)} min, the last with ${how} (a crash loop); see ${current.log}`;
        this.#onCrashLoop(this.#failure);
        return;
      }
      this.#say(
        `${current.name} exited (${how}); restarting it in ${String(decision.delayMs / 1000)} s as its Deployment would (exit ${String(decision.recentExits)} of ${String(this.#policy.crashLoopExits)} within ${String(this.#policy.crashLoopWindowMs / 60_000)} min stops everything); see ${current.log}`,
      );
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          stopped.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, decision.delayMs);
        stopped.addEventListener('abort', done, { once: true });
      });
      if (this.#isStopped()) return;
      const fresh = respawn();
      await this.#replaced(current, fresh);
      this.#say(`${fresh.name} restarted (pid ${String(fresh.pid)})`);
      current = fresh;
    }
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else
      signal.addEventListener(
        'abort',
        () => {
          resolve();
        },
        { once: true },
      );
  });
}
