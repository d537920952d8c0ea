const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration flag as milliseconds: Go-style `500ms`, `30s`, `1m30s`, `2h`, or a bare
 * number of seconds. Undefined when it is none of these (the caller says which flag).
 */
export function parseDurationMs(text: string): number | undefined {
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const match of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? 0);
  }
  return Math.round(total);
}
