import type { ControlPlane } from '../control-plane.ts';

// jest runs globalSetup and globalTeardown in the same process but may load them as
// separate module instances, so the handle lives on globalThis rather than in a module.
const KEY: unique symbol = Symbol.for('kruntimes.testing.controlPlane');

interface Slot {
  current: ControlPlane | undefined;
}

function slot(): Slot {
  const holder = globalThis as { [KEY]?: Slot };
  const existing = holder[KEY];
  if (existing !== undefined) return existing;
  const created: Slot = { current: undefined };
  holder[KEY] = created;
  return created;
}

export function setRunningControlPlane(controlPlane: ControlPlane): void {
  slot().current = controlPlane;
}

export function takeRunningControlPlane(): ControlPlane | undefined {
  const { current } = slot();
  slot().current = undefined;
  return current;
}
