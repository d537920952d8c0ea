export { SNAPSHOT_CONTROLLER_RULES, SNAPSHOT_WORKERS, SnapshotController } from './snapshot-controller.ts';
export { snapshotMismatch } from './decide-snapshot.ts';
