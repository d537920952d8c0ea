import type { OwnerEvidence, OwnershipEpoch } from '@kruntimes/fencing';
import { decideRecovery } from './decide.ts';
import type { RecoveryAction, RecoveryEvidence, RunFacts } from './decide.ts';

const epoch: OwnershipEpoch = { attempt: 1, pod: 'rt-abc', podUID: 'pod-uid-1' };
const alive: OwnerEvidence = {
  podExists: true,
  podDeleting: false,
  podInServiceEndpoints: true,
  ownerConfirmedRelease: undefined,
  leaseExpired: false,
};
const gone: OwnerEvidence = { ...alive, podExists: false, podInServiceEndpoints: false };
const released: OwnerEvidence = { ...alive, ownerConfirmedRelease: epoch };
const deletingUnrouted: OwnerEvidence = { ...alive, podDeleting: true, podInServiceEndpoints: false };
const deletingRouted: OwnerEvidence = { ...alive, podDeleting: true };
const expired: OwnerEvidence = { ...alive, leaseExpired: true, podInServiceEndpoints: false };
const silent: OwnerEvidence = { ...alive, ownerStoppedReporting: true };
const drainingUnrouted: RecoveryEvidence = { ...deletingUnrouted, ownerDraining: true };
const drainingRouted: RecoveryEvidence = { ...deletingRouted, ownerDraining: true };

const fn: RunFacts = {
  phase: 'Ready',
  mode: 'function',
  cancelRequested: false,
  retryPolicy: undefined,
  retryBudgetStart: 1,
  deleting: false,
  cleanupFinalizer: true,
  readyReason: 'FunctionRegistered',
  epoch,
};
const task: RunFacts = { ...fn, phase: 'Running', mode: 'task', cleanupFinalizer: false, readyReason: 'Executing' };
const safeTask: RunFacts = { ...task, retryPolicy: { retrySafe: true } };
const recovering = (run: RunFacts): RunFacts => ({ ...run, readyReason: 'Recovering' });

type Expected = Partial<RecoveryAction> & { type: RecoveryAction['type'] };

const table: [string, RunFacts, RecoveryEvidence, Expected][] = [
  // healthy owners
  ['a Ready function with a healthy owner', fn, alive, { type: 'none' }],
  ['a running task with a healthy owner', task, alive, { type: 'none' }],
  // suspicion: mark once, then wait; never a new attempt
  ['Lease expired: mark Recovering', fn, expired, { type: 'markRecovering', cause: 'leaseExpired' }],
  ['Lease expired, already Recovering: wait', recovering(fn), expired, { type: 'wait', cause: 'leaseExpired' }],
  ['deleting but still routed: mark Recovering', fn, deletingRouted, { type: 'markRecovering', cause: 'podDeleting' }],
  ['owner stopped listing the Run: mark Recovering', task, silent, { type: 'markRecovering', cause: 'ownerStoppedReporting' }],
  ['a Scheduled Run whose Lease expired', { ...task, phase: 'Scheduled', readyReason: 'Scheduled' }, expired, { type: 'markRecovering' }],
  // the suspicion cleared
  ['Recovering and the owner is back: Recovered', recovering(fn), alive, { type: 'recovered' }],
  // fenced: functions always retry
  ['function, Pod gone: requeue attempt 2', fn, gone, { type: 'requeue', cause: 'podGone', nextAttempt: 2, backoffSeconds: 5 }],
  ['function, Pod deleting and unrouted: requeue', recovering(fn), deletingUnrouted, { type: 'requeue', cause: 'podDeletingAndUnrouted' }],
  ['function, owner confirmed the release: requeue', fn, released, { type: 'requeue', cause: 'ownerConfirmedRelease' }],
  [
    'function in Running (registering) and Pod gone: requeue',
    { ...fn, phase: 'Running', readyReason: 'Registering' },
    gone,
    { type: 'requeue' },
  ],
  // a drain: the deleting owner hands its Runs over itself (no attempt spent on a planned move)
  ['function, owner draining, Pod unrouted: the owner hands it over', fn, drainingUnrouted, { type: 'none' }],
  ['function, owner draining, still routed: not suspect', fn, drainingRouted, { type: 'none' }],
  ['function Recovering, owner draining: left to the owner', recovering(fn), drainingUnrouted, { type: 'none' }],
  ['task, owner draining: it runs to its end in the drain window', task, drainingUnrouted, { type: 'none' }],
  [
    'function, owner draining but it confirmed the release without writing: requeue',
    fn,
    { ...drainingUnrouted, ownerConfirmedRelease: epoch },
    { type: 'requeue', cause: 'ownerConfirmedRelease' },
  ],
  ['function, the draining Pod is gone: requeue', fn, { ...gone, ownerDraining: true }, { type: 'requeue', cause: 'podGone' }],
  [
    'function, the drain is over (grace ended or Lease lost): requeue as today',
    fn,
    { ...drainingUnrouted, ownerDraining: false },
    { type: 'requeue', cause: 'podDeletingAndUnrouted' },
  ],
  [
    'deleting Run, owner draining: the finalizer rules are unchanged',
    { ...fn, deleting: true },
    drainingUnrouted,
    { type: 'removeFinalizer', cause: 'podDeletingAndUnrouted' },
  ],
  // fenced tasks
  ['task not retrySafe, Pod gone: Interrupted OwnerLost', task, gone, { type: 'interrupt', reason: 'OwnerLost', cause: 'podGone' }],
  ['retrySafe task, Pod gone: requeue', safeTask, gone, { type: 'requeue', nextAttempt: 2 }],
  ['task never claimed (Scheduled), Pod gone: requeue (no code ran)', { ...task, phase: 'Scheduled' }, gone, { type: 'requeue' }],
  // the organisation's retry policy
  [
    'retrySafe task, Pod gone, the namespace policy forbids: Interrupted OwnerLost naming it',
    {
      ...safeTask,
      automaticRetry: { allowed: false, refusedBy: 'namespace', message: 'the namespace retry policy forbids automatic retries (x)' },
    },
    gone,
    { type: 'interrupt', reason: 'OwnerLost', cause: 'podGone' },
  ],
  [
    'retrySafe task, Pod gone, the policy allows: requeue',
    { ...safeTask, automaticRetry: { allowed: true } },
    gone,
    { type: 'requeue', nextAttempt: 2 },
  ],
  [
    'function, Pod gone, the cluster policy forbids: requeue (a registration is always safe)',
    { ...fn, automaticRetry: { allowed: false, refusedBy: 'cluster', message: 'c' } },
    gone,
    { type: 'requeue' },
  ],
  // exhausted
  ['function at its last attempt: Failed', { ...fn, epoch: { ...epoch, attempt: 3 } }, gone, { type: 'fail', cause: 'podGone' }],
  ['retrySafe task with maxAttempts 1: Failed', { ...safeTask, retryPolicy: { retrySafe: true, maxAttempts: 1 } }, gone, { type: 'fail' }],
  // cancel while the owner is lost
  ['cancel requested, Pod gone: Cancelled', { ...task, cancelRequested: true }, gone, { type: 'cancel', cause: 'podGone' }],
  [
    'cancel requested, owner confirmed: Cancelled',
    { ...fn, cancelRequested: true },
    released,
    { type: 'cancel', cause: 'ownerConfirmedRelease' },
  ],
  [
    'cancel requested, Pod only deleting and unrouted: Interrupted CancelUnconfirmed',
    { ...fn, cancelRequested: true },
    deletingUnrouted,
    { type: 'interrupt', reason: 'CancelUnconfirmed' },
  ],
  [
    'cancel requested, Lease expired only: mark Recovering, no verdict yet',
    { ...fn, cancelRequested: true },
    expired,
    { type: 'markRecovering' },
  ],
  // deletion and the finalizer
  ['deleting, owner alive: the owner finalizes', { ...fn, deleting: true }, alive, { type: 'none' }],
  ['deleting, Lease expired (not fenced): keep the finalizer', { ...fn, deleting: true }, expired, { type: 'none' }],
  ['deleting, Pod gone: remove the finalizer', { ...fn, deleting: true }, gone, { type: 'removeFinalizer', cause: 'podGone' }],
  [
    'deleting, Pod deleting and unrouted: remove the finalizer',
    { ...fn, deleting: true },
    deletingUnrouted,
    { type: 'removeFinalizer', cause: 'podDeletingAndUnrouted' },
  ],
  [
    'deleting, unassigned (requeued) with the finalizer: remove it',
    { ...fn, phase: 'Pending', deleting: true, epoch: undefined },
    gone,
    { type: 'removeFinalizer', cause: 'unassigned' },
  ],
  ['deleting without the finalizer: nothing', { ...fn, deleting: true, cleanupFinalizer: false }, gone, { type: 'none' }],
  // not owned
  ['Pending without an owner', { ...fn, phase: 'Pending', epoch: undefined, cleanupFinalizer: false }, gone, { type: 'none' }],
  [
    'terminal with the finalizer, Pod gone: remove it',
    { ...fn, phase: 'Interrupted' },
    gone,
    { type: 'removeFinalizer', cause: 'podGone' },
  ],
  ['terminal with the finalizer, owner alive (it cleans up itself)', { ...fn, phase: 'Cancelled' }, alive, { type: 'none' }],
  ['terminal without the finalizer', { ...task, phase: 'Succeeded' }, gone, { type: 'none' }],
  ['WaitingInput has no owner', { ...task, phase: 'WaitingInput' }, gone, { type: 'none' }],
];

describe('decideRecovery', () => {
  it.each(table)('%s', (_name, run, evidence, expected) => {
    expect(decideRecovery(run, evidence)).toMatchObject(expected);
  });

  it('names the retry policy that refused in the interrupt message', () => {
    const forbidden: RunFacts = {
      ...safeTask,
      automaticRetry: { allowed: false, refusedBy: 'cluster', message: 'the cluster retry policy forbids automatic retries (y)' },
    };
    const action = decideRecovery(forbidden, gone);
    expect(action.type === 'interrupt' ? action.message : action.type).toMatch(
      /^owner lost and not retried automatically: the cluster retry policy forbids automatic retries \(y\); retry it with krt retry: attempt 1 on Pod /,
    );
  });

  it('never starts a new attempt without a fence proof', () => {
    for (const evidence of [alive, expired, deletingRouted, silent, { ...expired, podDeleting: true, podInServiceEndpoints: true }]) {
      for (const run of [fn, task, safeTask, recovering(fn)]) {
        expect(['none', 'wait', 'markRecovering', 'recovered']).toContain(decideRecovery(run, evidence).type);
      }
    }
  });

  it('says what it waits for', () => {
    const action = decideRecovery(fn, expired);
    expect(action.type === 'markRecovering' ? action.message : '').toMatch(/Lease expired; waiting for the Pod to be deleted/);
  });
});
