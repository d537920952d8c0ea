// A component beside the demo binds ports chosen just before it starts (freePorts: outside
// the ephemeral range). Another process may still bind one first: then the component exits
// saying so, and it starts again on new ports, a bounded number of times.
import { open } from 'node:fs/promises';
import { DevError } from './dev-components.ts';
import type { Running, Say } from './dev-components.ts';
import { describeExit } from './dev-restart.ts';

/** Starts of one component on new ports, the first included. */
export const START_ATTEMPTS = 3;
/** The most of a log's new output read to find why a component exited. */
const EXIT_LOG_BYTES = 64 * 1024;
const BIND_FAILED = /address already in use/i;

/** A component exited because a port it was given was taken: worth a start on new ports. */
export class PortTaken extends DevError {
  constructor(message: string) {
    super(message);
    this.name = 'PortTaken';
  }
}

/** The line of `text` that says a bind failed, shortened; undefined when none does. */
export function bindFailureLine(text: string): string | undefined {
  const line = text.split('\n').find((candidate) => BIND_FAILED.test(candidate));
  return line?.trim().slice(0, 300);
}

/** What `component` wrote to its log since it started (the first EXIT_LOG_BYTES of it). */
async function outputOf(component: Running): Promise<string> {
  const file = await open(component.log, 'r').catch(() => undefined);
  if (file === undefined) return '';
  try {
    const buffer = Buffer.alloc(EXIT_LOG_BYTES);
    const { bytesRead } = await file.read(buffer, 0, EXIT_LOG_BYTES, component.logStart);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await file.close();
  }
}

/** Why `component` exited: PortTaken when its log says a bind failed, else its exit and log. */
export async function exitError(component: Running): Promise<Error> {
  const how = describeExit(component.exitCode, component.exitSignal);
  const line = bindFailureLine(await outputOf(component));
  if (line !== undefined) return new PortTaken(`${component.name} exited (${how}): a port it was given was taken: ${line}`);
  return new DevError(`${component.name} exited (${how}); see ${component.log}`);
}

/**
 * `attempt` (which chooses its ports, starts the component and waits for it), again while it
 * fails with PortTaken, at most START_ATTEMPTS times in all; each new start said.
 */
export async function startOnFreshPorts<T>(say: Say, attempt: () => Promise<T>, attempts = START_ATTEMPTS): Promise<T> {
  for (let started = 1; ; started++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof PortTaken) || started >= attempts) throw error;
      say(`${error.message}; starting it again on new ports (start ${String(started + 1)} of ${String(attempts)})`);
    }
  }
}
