export { pathExists } from './paths.ts';
export { groupAlive, signalGroup } from './process-group.ts';
