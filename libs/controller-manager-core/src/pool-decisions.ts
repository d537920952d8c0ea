import type { ScalingCondition } from '@kruntimes/pool-core';

/** What the autoscaler decided for one Runtime, for the status the runtime controller writes. */
export interface PoolStatus {
  desiredReplicas: number;
  condition: ScalingCondition;
}

/**
 * The autoscaler's latest decision per Runtime key, read by the RuntimeReconciler: the Runtime keeps one status
 * writer, and the autoscaler only says what to put in it. In memory: a new leader decides again on its first pass.
 */
export class PoolDecisions {
  readonly #byKey = new Map<string, PoolStatus>();

  get(key: string): PoolStatus | undefined {
    return this.#byKey.get(key);
  }

  /** Whether it changed what the status would say. */
  set(key: string, status: PoolStatus): boolean {
    const previous = this.#byKey.get(key);
    this.#byKey.set(key, status);
    return previous === undefined || JSON.stringify(previous) !== JSON.stringify(status);
  }

  /** Whether there was one. */
  delete(key: string): boolean {
    return this.#byKey.delete(key);
  }
}
