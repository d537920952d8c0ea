import type { ChildProcess } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { groupAlive, signalGroup as signalProcessGroup } from '@kruntimes/host';

/**
 * Signals a child's whole process group. Children are spawned `detached` (their own
 * process group), so this reaches everything they started that did not leave the
 * group on purpose. ESRCH (the group is gone) is success.
 */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) signalProcessGroup(child.pid, signal);
}

/** Resolves when the child has exited (immediately when it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
}

/** How long a killed group may take to be empty before its survivors are reported. */
export const GROUP_GONE_BOUND_MS = 5_000;

/**
 * SIGTERM to the group, SIGKILL to the group after the grace period if the leader is
 * still running, then SIGKILL to the group until none of its members is left (bounded):
 * members that ignored SIGTERM or were re-parented must not outlive the execution, and
 * whoever reports the end (Cancelled, Timeout) reports it only once they are gone.
 * False when members survived the bound.
 */
export async function terminateGroup(child: ChildProcess, graceMs: number, boundMs = GROUP_GONE_BOUND_MS): Promise<boolean> {
  signalGroup(child, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
  });
  await Promise.race([exited(child), grace]);
  clearTimeout(timer);
  return killGroup(child, boundMs);
}

/**
 * SIGKILL to the group, then again until none of its members is left, at most `boundMs`
 * after the leader exited. False when members survived the bound.
 */
export async function killGroup(child: ChildProcess, boundMs = GROUP_GONE_BOUND_MS): Promise<boolean> {
  signalGroup(child, 'SIGKILL');
  await exited(child);
  return child.pid === undefined || killGroupUntilGone(child.pid, boundMs);
}

/** How often a group that must be gone is signalled and looked at again. */
const GONE_POLL_MS = 25;

/**
 * SIGKILLs the group until none of its members is alive (zombies waiting for init are
 * dead), at most `boundMs`. True when the group is gone. Linux reads /proc; elsewhere a
 * group whose only members are zombies counts as alive until they are reaped.
 */
export async function killGroupUntilGone(pgid: number, boundMs: number): Promise<boolean> {
  const deadline = Date.now() + boundMs;
  // Look before signalling: a group found gone is never signalled again (its ID may be reused).
  while (await groupHasLiveMembers(pgid)) {
    if (Date.now() >= deadline) return false;
    signalProcessGroup(pgid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, GONE_POLL_MS));
  }
  return true;
}

/** Whether a process of group `pgid` is alive (not a zombie). */
export async function groupHasLiveMembers(pgid: number): Promise<boolean> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return groupAlive(pgid);
  }
  const states = await Promise.all(
    entries
      .filter((entry) => /^\d+$/.test(entry))
      .map(async (pid) => {
        try {
          return parseStat(await readFile(`/proc/${pid}/stat`, 'utf8'));
        } catch {
          return undefined; // gone meanwhile
        }
      }),
  );
  return states.some((stat) => stat?.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X');
}

/** `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so fields count from the last `)`. */
export function parseStat(stat: string): { state: string; pgid: number } | undefined {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const pgid = Number(fields[2]);
  return state === undefined || !Number.isInteger(pgid) ? undefined : { state, pgid };
}
