/** The soak's fault kinds, and the choice of which ones a soak draws from (pure; no system needed). */
export const FAULT_KINDS = [
  'delete-pod',
  'freeze-pod',
  'zombie',
  'kill-runtimed',
  'kill-runtime-server',
  'restart-gateway',
  'kill-scheduler',
  'kill-stale-recovery',
  'restart-apiserver',
  'freeze-etcd',
  // Planned disruptions: the pool changes and its Pods drain (nothing may be cut short).
  'rollout',
  'scale-down',
  'evict-pod',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * Faults that are a change of the pool, not a failure: a drained Pod hands its function Runs
 * over without spending an attempt and lets its tasks finish within the drain window.
 */
const PLANNED_FAULT_KINDS: readonly FaultKind[] = ['rollout', 'scale-down', 'evict-pod'];
export const isPlanned = (kind: FaultKind): boolean => PLANNED_FAULT_KINDS.includes(kind);

const isFaultKind = (name: string): name is FaultKind => (FAULT_KINDS as readonly string[]).includes(name);

/**
 * The kinds a soak draws from, from `--faults` (or KRT_SOAK_FAULTS): a comma-separated list of
 * kinds, `planned` standing for the three planned ones; absent or empty means all of them.
 * The list keeps FAULT_KINDS' order whatever the order given, so that a seed draws the same
 * faults from the same set. An unknown name throws, listing the known ones.
 */
export function parseFaultKinds(text: string | undefined): readonly FaultKind[] {
  if (text === undefined || text.trim() === '') return FAULT_KINDS;
  const chosen = new Set<FaultKind>();
  const unknown: string[] = [];
  for (const name of text.split(',').map((part) => part.trim())) {
    if (name === 'planned') for (const kind of PLANNED_FAULT_KINDS) chosen.add(kind);
    else if (isFaultKind(name)) chosen.add(name);
    else unknown.push(name === '' ? '(empty)' : name);
  }
  if (unknown.length > 0)
    throw new Error(
      `unknown fault kind${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')} (planned: ${PLANNED_FAULT_KINDS.join(', ')})`,
    );
  return FAULT_KINDS.filter((kind) => chosen.has(kind));
}
