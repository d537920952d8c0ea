export { pathExists } from './paths.ts';
export { groupAlive, signalGroup } from './process-group.ts';
export { stopOnSignals } from './signals.ts';
export type { SignalLogger } from './signals.ts';
export { Watchdog } from './watchdog.ts';
export type { WatchdogOptions } from './watchdog.ts';
export { writeBoundedFile } from './bounded-file.ts';
