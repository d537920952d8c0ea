/**
 * runtimed of the scale bench's Runtime Pods (the image `kruntimes/runtimed` of its local
 * node): the real runtimed (apps/runtimed/src/main.ts) in the Pod of the Runtime named by
 * KRT_SCALE_REAL_RUNTIME, so that one runtimed's memory is measured; everywhere else the
 * health-only stand-in, so that Runs bound there are never executed. Imported, not spawned:
 * the measured process is the runtimed itself. No workspace import here, so that nothing
 * but runtimed's own modules is loaded into it.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..', '..', '..');
const real = process.env.RUNTIME_NAME !== undefined && process.env.RUNTIME_NAME === process.env.KRT_SCALE_REAL_RUNTIME;
const entry = real ? 'apps/runtimed/src/main.ts' : 'apps/scheduler/test/fixtures/fake-runtimed.ts';
await import(pathToFileURL(join(root, entry)).href);
