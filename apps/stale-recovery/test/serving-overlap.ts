import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** One invocation a Runtime Server ran, from its log line (pino: `time` in epoch ms). */
export interface ServedInvocation {
  podUID: string;
  runUid: string;
  attempt: number;
  invocationId: string;
  time: number;
}

const SERVED_MESSAGES = new Set(['invocation succeeded', 'invocation failed']);

/**
 * Every invocation that a Runtime Server of the namespace ran, read from every Runtime
 * Server log of the node (directories `<ns>_<pod>_<podUID>`): Pods of the API, force-deleted
 * Pods whose processes still run (zombies) and Pods long gone alike.
 */
export async function servedInvocations(stateDir: string, namespace: string): Promise<ServedInvocation[]> {
  const served: ServedInvocation[] = [];
  const logs = join(stateDir, 'logs');
  for (const dir of await readdir(logs)) {
    if (!dir.startsWith(`${namespace}_`)) continue;
    const podUID = dir.slice(dir.lastIndexOf('_') + 1);
    let text: string;
    try {
      text = await readFile(join(logs, dir, 'runtime-server.log'), 'utf8');
    } catch (error) {
      // A Pod whose Runtime Server never started has no log; any other failure is one.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    served.push(...parseServed(podUID, text));
  }
  return served;
}

export function parseServed(podUID: string, log: string): ServedInvocation[] {
  const served: ServedInvocation[] = [];
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: unknown; runUid?: unknown; attempt?: unknown; invocationId?: unknown; time?: unknown };
    if (typeof entry.msg !== 'string' || !SERVED_MESSAGES.has(entry.msg)) continue;
    if (typeof entry.runUid !== 'string' || typeof entry.attempt !== 'number' || typeof entry.time !== 'number')
      throw new Error(`a served invocation logged without runUid, attempt or time: ${line}`);
    served.push({
      podUID,
      runUid: entry.runUid,
      attempt: entry.attempt,
      invocationId: typeof entry.invocationId === 'string' ? entry.invocationId : '',
      time: entry.time,
    });
  }
  return served;
}

/**
 * The invariant over time: no two registrations (Pod, attempt) of one Run UID serve
 * invocations in overlapping intervals (from the first to the last invocation each
 * served). A registration that only held on (a frozen or fenced owner that served nothing
 * more) is not a violation; one that kept serving while another did is.
 */
export function overlappingServing(served: readonly ServedInvocation[]): string[] {
  const intervals = new Map<string, Map<string, { first: number; last: number; count: number }>>();
  for (const invocation of served) {
    const byRegistration = intervals.get(invocation.runUid) ?? new Map<string, { first: number; last: number; count: number }>();
    const key = `Pod ${invocation.podUID} attempt ${String(invocation.attempt)}`;
    const interval = byRegistration.get(key);
    if (interval === undefined) byRegistration.set(key, { first: invocation.time, last: invocation.time, count: 1 });
    else {
      interval.first = Math.min(interval.first, invocation.time);
      interval.last = Math.max(interval.last, invocation.time);
      interval.count += 1;
    }
    intervals.set(invocation.runUid, byRegistration);
  }
  const violations: string[] = [];
  for (const [runUid, byRegistration] of intervals) {
    const sorted = [...byRegistration].sort(([, a], [, b]) => a.first - b.first);
    for (let i = 0; i < sorted.length; i += 1) {
      for (let j = i + 1; j < sorted.length; j += 1) {
        const [aKey, a] = sorted[i] ?? [];
        const [bKey, b] = sorted[j] ?? [];
        if (a === undefined || b === undefined) continue;
        // Strictly inside: a hand-over within the same millisecond is not an overlap.
        if (b.first < a.last)
          violations.push(
            `Run ${runUid}: ${String(aKey)} served ${String(a.count)} invocations in [${iso(a.first)}, ${iso(a.last)}] and ${String(bKey)} served ${String(b.count)} in [${iso(b.first)}, ${iso(b.last)}]`,
          );
      }
    }
  }
  return violations;
}

const iso = (time: number): string => new Date(time).toISOString();
