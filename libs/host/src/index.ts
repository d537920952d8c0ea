export { forEachLimited } from './for-each-limited.ts';
export { pathExists } from './paths.ts';
export { groupAlive, signalGroup } from './process-group.ts';
export { exitAfterFlush, stopOnSignals } from './signals.ts';
export type { FlushableDestination, SignalLogger } from './signals.ts';
export { Watchdog } from './watchdog.ts';
export type { WatchdogOptions } from './watchdog.ts';
export { writeBoundedFile } from './bounded-file.ts';
