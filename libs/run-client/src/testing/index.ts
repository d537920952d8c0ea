// Test doubles of this lib's clients, for the table tests of the reconcilers that write
// through them. Not part of the runtime surface (src/index.ts): imported by tests only.
export { FakeObjectClient } from './fake-object-client.ts';
export type { RecordedWrite, WriteVerb } from './fake-object-client.ts';
