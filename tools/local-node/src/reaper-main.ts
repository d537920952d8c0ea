// The reaper sidecar (see reaper.ts). Reads `+<pgid>` / `-<pgid>` lines on stdin; on EOF,
// which the kernel delivers however the agent ends (even SIGKILL), it sends SIGTERM and
// then SIGKILL to every process group still registered, and exits.
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

const graceMs = Number.parseInt(process.argv[2] ?? '2000', 10);
const groups = new Set<number>();

function signal(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    // ESRCH: the group is gone, which is the goal; EPERM cannot happen for our own children.
    return false;
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const pgid = Number.parseInt(line.slice(1), 10);
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  if (line.startsWith('+')) groups.add(pgid);
  else if (line.startsWith('-')) groups.delete(pgid);
});
lines.on('close', () => {
  void (async () => {
    const alive = [...groups].filter((pgid) => signal(pgid, 'SIGTERM'));
    if (alive.length > 0) {
      process.stderr.write(`[local-node reaper] the agent is gone; stopping ${alive.length} process group(s)\n`);
      await sleep(graceMs);
      for (const pgid of alive) signal(pgid, 'SIGCONT');
      for (const pgid of alive) signal(pgid, 'SIGKILL');
    }
    process.exit(0);
  })();
});
