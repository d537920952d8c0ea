/**
 * Where a Manager is in its life, as its health probes see it:
 * - `starting`: the runnables of every replica (the endpoints) are starting;
 * - `standby`: campaigning for the Lease another replica holds (no watch, nothing to sync);
 * - `syncing`: leading (or without leader election), the shared informers not all synced yet;
 * - `running`: the informers synced and the leader-elected runnables started;
 * - `stopping`: stopped, the Lease lost or a start failed; the process is about to exit.
 */
export type ManagerPhase = 'starting' | 'standby' | 'syncing' | 'running' | 'stopping';

export interface Readiness {
  ready: boolean;
  /** Why, in a few words: the body of `/readyz`. */
  reason: string;
}

/**
 * Ready = may count as a working replica of its Deployment (a rollout moves on, a PDB
 * counts it). A standby is ready: it does what it should, which is waiting for the Lease,
 * and a rollout that waited for every replica to lead would never finish. A leader is ready
 * once its caches synced, so that a replica that cannot list what it watches (RBAC, the API
 * server) shows as not ready instead of holding the Lease unseen.
 */
export function decideReadiness(phase: ManagerPhase): Readiness {
  switch (phase) {
    case 'starting':
      return { ready: false, reason: 'starting' };
    case 'standby':
      return { ready: true, reason: 'standby: another replica leads' };
    case 'syncing':
      return { ready: false, reason: 'leading: informers not synced or controllers not started' };
    case 'running':
      return { ready: true, reason: 'informers synced; running' };
    case 'stopping':
      return { ready: false, reason: 'stopping' };
  }
}
