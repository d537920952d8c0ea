export * from './decide-snapshot.ts';
export * from './snapshot-controller.ts';
