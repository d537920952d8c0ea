import type { ChildProcess } from 'node:child_process';
import { signalGroup as signalProcessGroup } from '@kruntimes/host';

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

/**
 * SIGTERM to the group, SIGKILL to the group after the grace period if the leader is
 * still running, and SIGKILL to the group once more after the leader exits: members
 * that ignored SIGTERM or were re-parented must not outlive the execution.
 */
export async function terminateGroup(child: ChildProcess, graceMs: number): Promise<void> {
  signalGroup(child, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
  });
  await Promise.race([exited(child), grace]);
  clearTimeout(timer);
  signalGroup(child, 'SIGKILL');
  await exited(child);
  signalGroup(child, 'SIGKILL');
}
