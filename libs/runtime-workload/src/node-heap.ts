const MIB = 1024 * 1024;

const SUFFIXES: Readonly<Record<string, number>> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: MIB,
  Gi: 1024 * MIB,
  Ti: 1024 * 1024 * MIB,
};

/**
 * The bytes of a Kubernetes memory quantity (`160Mi`, `1Gi`, `512M`, `134217728`), or
 * undefined for any other form (milli-units, exponents, negative): then no heap flags are
 * derived from it, and the quantity itself is the API server's to validate.
 */
export function memoryQuantityBytes(quantity: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(|k|M|G|T|Ki|Mi|Gi|Ti)$/.exec(quantity.trim());
  if (match === null) return undefined;
  const [, amount = '', suffix = ''] = match;
  const factor = SUFFIXES[suffix];
  return factor === undefined ? undefined : Math.floor(Number(amount) * factor);
}

/**
 * What a Node process needs beside its V8 heap, MiB: the node binary's code pages (35-45
 * MiB resident), native allocations (TLS, HTTP/2, compiled code, sources; ~15-20 MiB for
 * runtimed). Measured by the footprint bench (docs/operations.md, "Footprint").
 */
export const NODE_NON_HEAP_MIB = 64;
/** Below this old space a Node service cannot hold its caches at all; the limit is then too small, not the heap. */
const MIN_OLD_SPACE_MIB = 32;

/**
 * The V8 heap flags (NODE_OPTIONS) of a Node container with this memory limit, so that V8
 * collects garbage before the kernel kills the container, and the young generation fits a
 * small Pod:
 * - `--max-semi-space-size`: 1 MiB per 128 MiB of limit, 1 to 16 (about what V8 derives
 *   from a small old space itself, stated so that it holds whatever V8's defaults become;
 *   each semi-space is resident once used, the young generation is three of them, and
 *   runtimed's RSS is ~7 MiB lower at 1 than at 3);
 * - `--max-old-space-size`: the limit less what Node needs beside its heap and the young
 *   generation, at least 32.
 */
export function nodeHeapOptions(limitBytes: number): string {
  const limitMib = Math.floor(limitBytes / MIB);
  const semiSpace = Math.min(16, Math.max(1, Math.floor(limitMib / 128)));
  const oldSpace = Math.max(MIN_OLD_SPACE_MIB, limitMib - NODE_NON_HEAP_MIB - 3 * semiSpace);
  return `--max-semi-space-size=${String(semiSpace)} --max-old-space-size=${String(oldSpace)}`;
}
