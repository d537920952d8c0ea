import { readFile, readdir } from 'node:fs/promises';

/**
 * The live processes (not zombies) whose real or effective uid is `uid`, from /proc: what
 * must be gone before the uid goes to another Run. Empty where /proc cannot be read.
 */
export async function processesOf(uid: number): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const found = await Promise.all(
    entries
      .filter((entry) => /^\d+$/.test(entry))
      .map(async (pid) => {
        try {
          return statusOf(await readFile(`/proc/${pid}/status`, 'utf8')).runsAs(uid) ? Number(pid) : undefined;
        } catch {
          return undefined; // gone meanwhile
        }
      }),
  );
  return found.filter((pid) => pid !== undefined);
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
