/**
 * Loaded by the footprint bench (footprint-bench.ts) into runtimed, the Runtime Server and
 * the gateway with `--import=<a copy of this file>` (KRT_E2E_NODE_OPTIONS),
 * never by the product itself. On SIGUSR2 it writes `<pid>.json` next to its own copy:
 * `process.memoryUsage()` before and after a full GC, and how many watch events this process
 * received on its Run watches (lines of `GET .../runs?watch=true` response bodies, counted
 * on undici's diagnostics channels as client-node's Watch receives them, bookmarks apart).
 * When the bench was run with KRT_FOOTPRINT_HEAP_SNAPSHOTS=<dir> (it names the directory in
 * `heap-snapshots` beside this file: Pod processes get no environment of the bench), each
 * reading also writes `<pid>.heapsnapshot` there after the GC, to see what the live heap holds.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { subscribe } from 'node:diagnostics_channel';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { TextDecoder } from 'node:util';
import { runInNewContext } from 'node:vm';

export interface ProbeReading {
  pid: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** heapUsed after a full GC: the live heap. */
  liveHeap: number;
  /** Run watch events received (bookmarks not included). */
  runWatchEvents: number;
  runWatchBookmarks: number;
  /** Run watch requests answered 200. */
  runWatches: number;
}

const counts = { runWatchEvents: 0, runWatchBookmarks: 0, runWatches: 0 };

/** Open Run watches (undici's request objects) and the partial line each body ended with so far. */
const watches = new WeakMap<object, { decoder: TextDecoder; partial: string }>();

/**
 * Counts Run watch events on undici's diagnostics channels (what client-node's Watch fetches
 * with), which are global by name: it works whether undici is a package of its own or
 * inside a bundle, and changes nothing of the request. Watch bodies are not compressed by
 * the API server, so the chunks are the JSON lines themselves.
 */
function hookWatches(): void {
  subscribe('undici:request:headers', (message) => {
    const { request, response } = message as { request: { path?: string }; response: { statusCode: number } };
    if (response.statusCode !== 200 || !/\/runs\?(.*&)?watch=true/.test(request.path ?? '')) return;
    counts.runWatches += 1;
    watches.set(request, { decoder: new TextDecoder(), partial: '' });
  });
  subscribe('undici:request:bodyChunkReceived', (message) => {
    const { request, chunk } = message as { request: object; chunk: Uint8Array };
    const watch = watches.get(request);
    if (watch === undefined) return;
    const lines = (watch.partial + watch.decoder.decode(chunk, { stream: true })).split('\n');
    watch.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line.trim() === '') continue;
      if (line.startsWith('{"type":"BOOKMARK"')) counts.runWatchBookmarks += 1;
      else counts.runWatchEvents += 1;
    }
  });
}

hookWatches();
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const dir = dirname(fileURLToPath(import.meta.url));

process.on('SIGUSR2', () => {
  const before = process.memoryUsage();
  gc();
  const reading: ProbeReading = {
    pid: process.pid,
    rss: before.rss,
    heapUsed: before.heapUsed,
    heapTotal: before.heapTotal,
    external: before.external,
    liveHeap: process.memoryUsage().heapUsed,
    ...counts,
  };
  const snapshotsNamed = join(dir, 'heap-snapshots');
  if (existsSync(snapshotsNamed))
    writeHeapSnapshot(join(readFileSync(snapshotsNamed, 'utf8').trim(), `${String(process.pid)}.heapsnapshot`));
  const file = join(dir, `${String(process.pid)}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(reading));
  renameSync(`${file}.tmp`, file);
});
