// Test doubles of this lib's interfaces, for the table tests of the reconcilers built on it.
// Not part of the runtime surface (src/index.ts): imported by tests only.
export { FakeCache } from './fake-cache.ts';
export { RecordingLogger } from './recording-logger.ts';
export type { LoggedLine } from './recording-logger.ts';
export { FakeOwnedObjects } from './fake-owned-objects.ts';
export type { OwnedWrite } from './fake-owned-objects.ts';
