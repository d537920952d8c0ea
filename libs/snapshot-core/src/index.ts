export { SNAPSHOT_CONTROLLER_RULES, SnapshotController } from './snapshot-controller.ts';
export { snapshotMismatch } from './decide-snapshot.ts';
