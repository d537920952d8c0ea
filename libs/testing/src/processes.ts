import { readFile, readdir } from 'node:fs/promises';

/** A process is gone when it does not exist or is a zombie waiting for its reaper. */
export async function processGone(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${String(pid)}/stat`, 'utf8');
    return stat.split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

/**
 * The PIDs still alive after waiting, bounded, for all to be gone. A process that was sent
 * SIGKILL still takes a moment to die on a busy machine; a survivor after the bound is a
 * process that was never killed.
 */
export async function survivingProcesses(pids: readonly number[], timeoutMs = 5_000, intervalMs = 20): Promise<number[]> {
  let alive = [...pids];
  for (let waited = 0; ; waited += intervalMs) {
    const gone = await Promise.all(alive.map(processGone));
    alive = alive.filter((_, index) => gone[index] !== true);
    if (alive.length === 0 || waited >= timeoutMs) return alive;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** PIDs of live (not zombie) processes in process group `pgid`, read from /proc. */
export async function liveGroupMembers(pgid: number): Promise<number[]> {
  const live: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') live.push(Number(entry));
  }
  return live;
}

/**
 * The live members of process group `pgid` after waiting, bounded, for none to be left: a
 * group sent SIGKILL still takes a moment to die on a busy machine (as survivingProcesses).
 */
export async function survivingGroupMembers(pgid: number, timeoutMs = 5_000, intervalMs = 20): Promise<number[]> {
  for (let waited = 0; ; waited += intervalMs) {
    const live = await liveGroupMembers(pgid);
    if (live.length === 0 || waited >= timeoutMs) return live;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
