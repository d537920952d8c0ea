import { NAMESPACE_RUN_SLOTS_ANNOTATION, RUN_REASONS } from '@kruntimes/api';

/*
 * Why a namespace annotation, not a ResourceQuota entry such as `kruntimes.io/run-slots`:
 * ResourceQuota accepts such a key, but the API server neither enforces nor counts it, so
 * `kubectl describe resourcequota` would show 0 used while every slot is held, and making
 * it show the truth would mean writing the status of every quota in the cluster, against
 * the resource-quota controller that owns it. A slot is taken at binding, long after the
 * Run's create that quota admission sees, so only the scheduler can enforce it anyway.
 * The Namespace is what the cap is about, only a cluster admin may edit it (tenants with
 * the namespaced `admin`/`edit` roles may not), and the scheduler already watches it for
 * the block policy's label: no new kind, watch or RBAC rule. Object counts stay in
 * ResourceQuota (`count/runs.kruntimes.io`), where the API server enforces them at create.
 */

/** A namespace's cap on run slots held at once, from its `kruntimes.io/run-slots` annotation. */
export type RunSlotCap =
  | { kind: 'none' }
  | { kind: 'cap'; slots: number }
  /** Not a whole number: read as 0 (fail closed), so a typo never lifts a cap. */
  | { kind: 'invalid'; value: string };

export function runSlotCap(annotations: Readonly<Record<string, string>> | undefined): RunSlotCap {
  const value = annotations?.[NAMESPACE_RUN_SLOTS_ANNOTATION];
  if (value === undefined) return { kind: 'none' };
  const slots = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
  return Number.isSafeInteger(slots) ? { kind: 'cap', slots } : { kind: 'invalid', value };
}

/** The facts of one namespace's cap at one moment of a placement pass. */
export interface NamespaceSlots {
  namespace: string;
  cap: RunSlotCap;
  /** Slots the namespace's Runs hold now, over all its Runtimes (heldRunSlots), binds of this pass included. */
  held: number;
}

export interface RunSlotRefusal {
  reason: typeof RUN_REASONS.runSlotCapReached;
  /** Names the cap, not the count held: a waiting Run is written again only when the cap changes. */
  message: string;
}

/** Whether one more Run of the namespace may take a slot: undefined when it may, else why it waits. */
export function decideRunSlot(slots: NamespaceSlots): RunSlotRefusal | undefined {
  const { namespace, cap, held } = slots;
  const source = `namespace annotation ${NAMESPACE_RUN_SLOTS_ANNOTATION}`;
  switch (cap.kind) {
    case 'none':
      return undefined;
    case 'cap':
      if (held < cap.slots) return undefined;
      return {
        reason: RUN_REASONS.runSlotCapReached,
        message: `namespace ${namespace} holds all ${cap.slots} run slots its cap allows (${source}: "${cap.slots}"): the Run binds when one of them frees`,
      };
    case 'invalid':
      return {
        reason: RUN_REASONS.runSlotCapReached,
        message: `namespace ${namespace} has ${source}: "${cap.value}", which is not a whole number: read as a cap of 0 run slots until it is fixed`,
      };
  }
}

/**
 * Slots a namespace's Runs hold: each Run holding a Pod unit (run-state's capacityHold), or
 * whose bind this scheduler wrote and its cache does not show yet; a Run that is both counts once.
 */
export function heldRunSlots(holding: Iterable<string>, assumed: Iterable<string>): number {
  return new Set([...holding, ...assumed]).size;
}
