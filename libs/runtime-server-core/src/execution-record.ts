import type { ArtifactClaim } from './artifact-claims.ts';
import type { Clock } from './clock.ts';

/** How an execution ended, exactly as its Execute stream ends (or would have ended). */
export interface ExecutionEnding {
  readonly reason: 'completed' | 'cancelled' | 'timed_out' | 'start_failed' | 'waiting_input';
  readonly exitCode: number;
  readonly signal: string;
  readonly outputs: Readonly<Record<string, string>>;
  readonly outputsError: string;
  readonly message: string;
  /** The ResultManifest (empty without artifacts). */
  readonly manifest: readonly ArtifactClaim[];
  readonly time: number;
}

export type ExecutionStatus =
  | { readonly state: 'unknown' }
  | { readonly state: 'running'; readonly executionId: string; readonly pid: number; readonly startedAt: number }
  | {
      readonly state: 'exited';
      readonly executionId: string;
      /** Undefined when no process was started (start_failed). */
      readonly started: { readonly pid: number; readonly startedAt: number } | undefined;
      readonly ending: ExecutionEnding;
    };

export interface ExecutionRecordOptions {
  readonly clock: Clock;
  /** Endings remembered at most; the oldest goes first. */
  readonly capacity?: number;
  /** Endings older than this are forgotten. */
  readonly retentionMs?: number;
}

/** The latest 1024 endings, for one hour: far longer than runtimed takes to ask after a broken stream. */
export const EXECUTION_RECORD_CAPACITY = 1024;
export const EXECUTION_RECORD_RETENTION_MS = 60 * 60 * 1000;

interface Entry {
  executionId: string;
  started: { pid: number; startedAt: number } | undefined;
  ending: ExecutionEnding | undefined;
  endedAt: number;
}

/**
 * What became of recent task executions, by Run UID and attempt, so that runtimed can
 * settle an Execute stream that broke before its `exited`. Running executions are always
 * known (there are only as many as processes); endings are bounded by count and age.
 * In memory only: after a server restart every attempt is unknown.
 */
export class ExecutionRecord {
  readonly #clock: Clock;
  readonly #capacity: number;
  readonly #retentionMs: number;
  readonly #running = new Map<string, Entry>();
  /** Insertion order is ending order: the first key is the oldest ending. */
  readonly #ended = new Map<string, Entry>();

  constructor(options: ExecutionRecordOptions) {
    this.#clock = options.clock;
    this.#capacity = Math.max(0, options.capacity ?? EXECUTION_RECORD_CAPACITY);
    this.#retentionMs = options.retentionMs ?? EXECUTION_RECORD_RETENTION_MS;
  }

  /** The attempt's process started (a newer execution of the same attempt replaces an older record). */
  started(runUid: string, attempt: number, executionId: string, pid: number, startedAt: number): void {
    const key = keyOf(runUid, attempt);
    this.#ended.delete(key);
    this.#running.set(key, { executionId, started: { pid, startedAt }, ending: undefined, endedAt: 0 });
  }

  /** The attempt's execution ended (also when it never started a process). */
  ended(runUid: string, attempt: number, executionId: string, ending: ExecutionEnding): void {
    const key = keyOf(runUid, attempt);
    const running = this.#running.get(key);
    const started = running?.executionId === executionId ? running.started : undefined;
    if (running?.executionId === executionId) this.#running.delete(key);
    this.#ended.delete(key);
    this.#ended.set(key, { executionId, started, ending, endedAt: this.#clock() });
    this.#prune();
  }

  get(runUid: string, attempt: number): ExecutionStatus {
    const key = keyOf(runUid, attempt);
    const running = this.#running.get(key);
    if (running?.started !== undefined) {
      return { state: 'running', executionId: running.executionId, pid: running.started.pid, startedAt: running.started.startedAt };
    }
    this.#prune();
    const ended = this.#ended.get(key);
    if (ended?.ending === undefined) return { state: 'unknown' };
    return { state: 'exited', executionId: ended.executionId, started: ended.started, ending: ended.ending };
  }

  /** Endings held now (for tests and metrics). */
  get endings(): number {
    this.#prune();
    return this.#ended.size;
  }

  #prune(): void {
    const oldest = this.#clock() - this.#retentionMs;
    for (const [key, entry] of this.#ended) {
      if (this.#ended.size <= this.#capacity && entry.endedAt >= oldest) break;
      this.#ended.delete(key);
    }
  }
}

function keyOf(runUid: string, attempt: number): string {
  return `${runUid}/${String(attempt)}`;
}
