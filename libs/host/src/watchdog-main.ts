// The watchdog sidecar (see watchdog.ts). Started by its owner with
// `node watchdog-main.ts GRACE_MS OWNER`; it must keep working after the owner is gone, so
// it imports nothing but node built-ins and the message parser.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseWatchdogMessage } from './watchdog-protocol.ts';

const graceMs = Number(process.argv[2] ?? '5000');
const prefix = `[kruntimes watchdog of ${process.argv[3] ?? 'its owner'}]`;
const groups = new Set<number>();
const directories = new Set<string>();
let cleaning = false;

function alive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    // ESRCH: gone. EPERM: the ID now belongs to someone else's processes; never signal it.
    return false;
  }
  return !isZombie(pgid);
}

/** A killed leader whose parent is gone stays a zombie until init reaps it: it is dead. */
function isZombie(pid: number): boolean {
  try {
    // /proc/PID/stat: "pid (comm) state ..."; comm may contain spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no /proc (not Linux) or already reaped
  }
}

function signal(pgid: number, name: NodeJS.Signals): void {
  try {
    process.kill(-pgid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') {
      process.stderr.write(`${prefix} cannot send ${name} to process group ${pgid}: ${String(error)}\n`);
    }
  }
}

async function cleanUp(reason: string): Promise<void> {
  if (cleaning) return;
  cleaning = true;
  const leftovers = [...groups].filter(alive);
  if (leftovers.length > 0) {
    process.stderr.write(`${prefix} ${reason}: stopping process groups ${leftovers.join(', ')}\n`);
    for (const pgid of leftovers) signal(pgid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && leftovers.some(alive)) await sleep(100);
    for (const pgid of leftovers.filter(alive)) signal(pgid, 'SIGKILL');
  }
  for (const path of directories) {
    try {
      await rm(path, { recursive: true, force: true, maxRetries: 3 });
    } catch (error) {
      process.stderr.write(`${prefix} cannot remove ${path}: ${String(error)}\n`);
    }
  }
  process.exit(0);
}

for (const name of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.on(name, () => void cleanUp(`received ${name}`));
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  try {
    const message = parseWatchdogMessage(line);
    switch (message.kind) {
      case 'watch-process-group':
        groups.add(message.pgid);
        break;
      case 'release-process-group':
        groups.delete(message.pgid);
        break;
      case 'watch-directory':
        directories.add(message.path);
        break;
    }
  } catch (error) {
    process.stderr.write(`${prefix} ${String(error)}\n`);
  }
});
// EOF: the owner closed the pipe (clean shutdown) or died (the kernel closed it).
lines.on('close', () => void cleanUp('the owner exited without stopping what it started'));
