import { readFileSync, readdirSync } from 'node:fs';

/**
 * The live processes (not zombies) whose real or effective uid is `uid`, from /proc: what
 * must be gone before the uid goes to another Run. Empty where /proc cannot be read.
 * Synchronous on purpose: one pass over a few hundred small files takes well under a
 * millisecond, where as many thread-pool reads took six times as long (measured, 83
 * processes: 0.6 ms against 3.5 ms), and a Run's end pays it once or twice.
 */
export function processesOf(uid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const pid of entries) {
    if (!/^\d+$/.test(pid)) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (statusOf(status).runsAs(uid)) found.push(Number(pid));
  }
  return found;
}

/** The `State:` and `Uid:` lines of /proc/<pid>/status (`Uid: real effective saved fs`). */
export function statusOf(status: string): { state: string; uids: number[]; runsAs(uid: number): boolean } {
  const state = /^State:\s+(\S)/m.exec(status)?.[1] ?? '';
  const uids = (/^Uid:\s+(.*)$/m.exec(status)?.[1] ?? '').trim().split(/\s+/).map(Number);
  return {
    state,
    uids,
    runsAs: (uid) => state !== 'Z' && state !== 'X' && (uids[0] === uid || uids[1] === uid),
  };
}
