/**
 * Signals a whole process group (children are spawned `detached`, so their group reaches
 * everything they started). A group that is already gone is not an error: returns false.
 * Signal 0 only probes. Groups 0 and 1 are never signalled (our own group, and init).
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

export function groupAlive(pgid: number): boolean {
  return signalGroup(pgid, 0);
}
