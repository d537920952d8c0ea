import { NAMESPACE_BLOCKED_LABEL, RUN_REASONS } from '@kruntimes/api';
import type { AdmissionRefusalReason } from '@kruntimes/run-state';

/** Why a Pending Run may not be bound now, whatever the capacity (the scheduler's admission gate). */
export interface AdmissionRefusal {
  action: 'refuse';
  reason: AdmissionRefusalReason;
  message: string;
}

/**
 * The gate's answer for one Pending Run: bind it if there is room, refuse it (it waits
 * with the reason), or defer it (no answer could be had about its creator's right: it
 * waits as it is, nothing written, and is looked at again soon).
 */
export type AdmissionVerdict = { action: 'admit' } | AdmissionRefusal | { action: 'defer'; message: string };

/**
 * What the scheduler's review found for the user recorded as the Run's creator (verb `use`
 * on the Run's Runtime): `allowed`, `denied`, or `unrecorded` when the Run carries no
 * creator (created before the admission policy was installed, or without it): such a Run
 * is not reviewed and binds as before. `unknown` when no answer could be had (the API
 * server could not be asked): the Run waits as it is and is looked at again, never bound on a guess.
 */
export type CreatorAccess =
  | { kind: 'allowed' }
  | { kind: 'denied'; user: string; reason: string }
  | { kind: 'unrecorded' }
  | { kind: 'unknown'; user: string; error: string };

export interface AdmissionFacts {
  runtime: string;
  namespace: string;
  /** The Runtime's `spec.suspend`. */
  runtimeSuspended: boolean;
  /** The namespace's labels; undefined when the namespace is not in the cache. */
  namespaceLabels: Readonly<Record<string, string>> | undefined;
  /** Undefined when no review was asked (the block policy refused first, or the Run could not be bound now). */
  access: CreatorAccess | undefined;
}

/** The block policy alone: asked first, since a blocked Run needs no access review. */
export function decideBlockPolicy(
  facts: Pick<AdmissionFacts, 'runtime' | 'namespace' | 'runtimeSuspended' | 'namespaceLabels'>,
): AdmissionRefusal | undefined {
  if (facts.runtimeSuspended) {
    return {
      action: 'refuse',
      reason: RUN_REASONS.runtimeSuspended,
      message: `Runtime ${facts.runtime} is suspended (spec.suspend: true): no new Run is bound until it is lifted`,
    };
  }
  if (facts.namespaceLabels?.[NAMESPACE_BLOCKED_LABEL] === 'true') {
    return {
      action: 'refuse',
      reason: RUN_REASONS.namespaceBlocked,
      message: `namespace ${facts.namespace} is labelled ${NAMESPACE_BLOCKED_LABEL}=true: no new Run is bound until the label is removed`,
    };
  }
  return undefined;
}

/**
 * The whole gate at assignment, in order: the Runtime suspended, the namespace blocked,
 * then the recorded creator's right to `use` the Runtime (`access`: undefined when it was
 * not reviewed, which admits).
 */
export function decideAdmission(facts: AdmissionFacts): AdmissionVerdict {
  const blocked = decideBlockPolicy(facts);
  if (blocked !== undefined) return blocked;
  const access = facts.access;
  if (access === undefined) return { action: 'admit' };
  switch (access.kind) {
    case 'allowed':
    case 'unrecorded':
      return { action: 'admit' };
    case 'denied':
      return {
        action: 'refuse',
        reason: RUN_REASONS.forbidden,
        message: `user ${access.user}, who created the Run, may no longer use Runtime ${facts.runtime}${access.reason === '' ? '' : ` (${access.reason})`}`,
      };
    case 'unknown':
      return {
        action: 'defer',
        message: `could not check whether user ${access.user}, who created the Run, may use Runtime ${facts.runtime}: ${access.error}`,
      };
  }
}
