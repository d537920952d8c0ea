/**
 * Loaded by the footprint bench (footprint-bench.ts) into runtimed, the Runtime Server and
 * the gateway with `NODE_OPTIONS=--import=<a copy of this file>` (KRT_E2E_NODE_OPTIONS),
 * never by the product itself. On SIGUSR2 it writes `<pid>.json` next to its own copy:
 * `process.memoryUsage()` before and after a full GC, and how many watch events this process
 * received on its Run watches (lines of `GET .../runs?watch=true` response bodies, counted
 * on the bytes client-node's Watch reads, bookmarks apart).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
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

/** Counts the lines of a watch body as they pass, without changing a byte. */
function counting(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let partial = '';
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const lines = (partial + decoder.decode(chunk, { stream: true })).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          if (line.trim() === '') continue;
          if (line.startsWith('{"type":"BOOKMARK"')) counts.runWatchBookmarks += 1;
          else counts.runWatchEvents += 1;
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

type Fetch = (url: unknown, init?: unknown) => Promise<Response>;

/** Wraps undici's fetch (what client-node's Watch calls) before client-node is imported. */
function hookWatches(): void {
  const main = process.argv[1];
  if (main === undefined) return;
  let undici: { fetch: Fetch };
  try {
    undici = createRequire(main)('undici') as { fetch: Fetch };
  } catch {
    return;
  }
  const original = undici.fetch;
  undici.fetch = async (url, init) => {
    const response = await original(url, init);
    const target = typeof url === 'string' ? url : url instanceof URL ? url.href : '';
    if (response.status !== 200 || response.body === null || !/\/runs\?(.*&)?watch=true/.test(target)) return response;
    counts.runWatches += 1;
    const body = counting(response.body);
    return new Proxy(response, {
      get(object, property) {
        if (property === 'body') return body;
        const value: unknown = Reflect.get(object, property, object);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
      },
    });
  };
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
  const file = join(dir, `${String(process.pid)}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(reading));
  renameSync(`${file}.tmp`, file);
});
