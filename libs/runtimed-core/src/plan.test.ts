import { REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { Run, RunPhase } from '@kruntimes/api';
import { decideOutcomeRecord, planRun, remainingIdleMs, remainingLifetimeMs } from './plan.ts';
import type { LocalRun, RunAction } from './plan.ts';

const POD = '11111111-1111-4111-8111-111111111111';
const OTHER_POD = '22222222-2222-4222-8222-222222222222';
const UID = '33333333-3333-4333-8333-333333333333';
const NOW = Date.parse('2026-12-02T12:00:00Z');

interface RunShape {
  phase?: RunPhase;
  pod?: string;
  attempt?: number;
  mode?: 'task' | 'function';
  cancel?: boolean;
  deleting?: boolean;
  finalizer?: boolean;
  runtime?: string;
  timeout?: string;
  startedSecondsAgo?: number;
}

function run(shape: RunShape): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: {
      name: 'r',
      namespace: 'ns',
      uid: UID,
      ...(shape.deleting === true ? { deletionTimestamp: '2026-12-02T11:59:00Z' } : {}),
      ...(shape.finalizer === true ? { finalizers: [REGISTRATION_CLEANUP_FINALIZER] } : {}),
    },
    spec: {
      runtime: shape.runtime ?? 'python',
      source: { inline: 'x' },
      mode: shape.mode === 'function' ? { function: { handler: 'main:f' } } : { task: {} },
      ...(shape.cancel === true ? { cancelRequested: true } : {}),
      ...(shape.timeout === undefined ? {} : { timeout: shape.timeout }),
    },
    status: {
      ...(shape.phase === undefined ? {} : { phase: shape.phase }),
      ...(shape.pod === undefined ? {} : { assignedPod: 'p', assignedPodUID: shape.pod, attempt: shape.attempt ?? 1 }),
      ...(shape.startedSecondsAgo === undefined ? {} : { startTime: new Date(NOW - shape.startedSecondsAgo * 1000).toISOString() }),
    },
  };
}

const local = (attempt = 1, uid = UID): LocalRun => ({ uid, attempt, mode: 'function' });
const taskLocal = (attempt = 1): LocalRun => ({ uid: UID, attempt, mode: 'task' });
const unwritten = { outcomeUnwritten: true };

const cases: [string, Run | undefined, LocalRun | undefined, RunAction['type'], { outcomeUnwritten?: boolean }?][] = [
  ['gone, nothing local', undefined, undefined, 'ignore'],
  ['gone, held locally', undefined, local(), 'release'],
  ['another Runtime', run({ runtime: 'bash', phase: 'Scheduled', pod: POD }), undefined, 'ignore'],
  ['Pending', run({ phase: 'Pending' }), undefined, 'ignore'],
  ['Scheduled on another Pod', run({ phase: 'Scheduled', pod: OTHER_POD }), undefined, 'ignore'],
  ['Scheduled here', run({ phase: 'Scheduled', pod: POD }), undefined, 'claim'],
  ['Scheduled here with cancel: claim first', run({ phase: 'Scheduled', pod: POD, cancel: true }), undefined, 'claim'],
  ['function Running', run({ phase: 'Running', pod: POD, mode: 'function' }), undefined, 'register'],
  ['function Ready', run({ phase: 'Ready', pod: POD, mode: 'function' }), local(), 'watch'],
  ['task Running', run({ phase: 'Running', pod: POD }), undefined, 'execute'],
  ['cancel while Ready', run({ phase: 'Ready', pod: POD, mode: 'function', cancel: true }), local(), 'cancel'],
  ['lifetime over', run({ phase: 'Ready', pod: POD, mode: 'function', timeout: '10s', startedSecondsAgo: 11 }), local(), 'expire'],
  ['lifetime left', run({ phase: 'Ready', pod: POD, mode: 'function', timeout: '10s', startedSecondsAgo: 9 }), local(), 'watch'],
  [
    'cancel wins over lifetime',
    run({ phase: 'Running', pod: POD, cancel: true, timeout: '1s', startedSecondsAgo: 5 }),
    undefined,
    'cancel',
  ],
  ['deleting with finalizer', run({ phase: 'Ready', pod: POD, mode: 'function', deleting: true, finalizer: true }), local(), 'finalize'],
  ['deleting without finalizer', run({ phase: 'Running', pod: POD, deleting: true }), undefined, 'ignore'],
  ['terminal with finalizer', run({ phase: 'Cancelled', pod: POD, mode: 'function', finalizer: true }), undefined, 'removeFinalizer'],
  ['terminal', run({ phase: 'Succeeded', pod: POD }), undefined, 'ignore'],
  ['requeued to Pending while held', run({ phase: 'Pending', attempt: 2 }), local(1), 'release'],
  ['rebound here at a higher attempt', run({ phase: 'Scheduled', pod: POD, attempt: 2 }), local(1), 'release'],
  ['moved to another Pod', run({ phase: 'Scheduled', pod: OTHER_POD, attempt: 2 }), local(1), 'release'],
  ['name reused by another Run', run({ phase: 'Scheduled', pod: POD }), local(1, '44444444-4444-4444-8444-444444444444'), 'release'],
  ['WaitingInput has no owner', run({ phase: 'WaitingInput', pod: POD }), undefined, 'ignore'],
  // The outcome of an execution that ended here could not be written (API server down).
  ['task ended, outcome unwritten', run({ phase: 'Running', pod: POD }), taskLocal(), 'writeOutcome', unwritten],
  [
    'outcome unwritten past the lifetime: the outcome, not Timeout',
    run({ phase: 'Running', pod: POD, timeout: '25s', startedSecondsAgo: 40 }),
    taskLocal(),
    'writeOutcome',
    unwritten,
  ],
  [
    'outcome unwritten with cancel requested: the outcome (the state machine lets the cancel win)',
    run({ phase: 'Running', pod: POD, cancel: true }),
    taskLocal(),
    'writeOutcome',
    unwritten,
  ],
  ['outcome unwritten, local state already released', run({ phase: 'Running', pod: POD }), undefined, 'writeOutcome', unwritten],
  ['outcome unwritten but the Run moved on', run({ phase: 'Pending', attempt: 2 }), taskLocal(1), 'release', unwritten],
  ['outcome unwritten but the Run ended', run({ phase: 'Succeeded', pod: POD }), undefined, 'ignore', unwritten],
  ['outcome unwritten but the Run is deleting', run({ phase: 'Running', pod: POD, deleting: true }), undefined, 'ignore', unwritten],
  // runtimed restarted after the attempt ended here, its outcome recorded on the Pod and not
  // written: nothing local, the workspace gone. Written, never executed again.
  ['restarted, outcome recorded on the Pod', run({ phase: 'Running', pod: POD, attempt: 2 }), undefined, 'writeOutcome', unwritten],
  [
    'restarted, outcome recorded, lifetime over: the outcome, not Timeout',
    run({ phase: 'Running', pod: POD, timeout: '25s', startedSecondsAgo: 600 }),
    undefined,
    'writeOutcome',
    unwritten,
  ],
  [
    'restarted, outcome recorded, cancel requested',
    run({ phase: 'Running', pod: POD, cancel: true }),
    undefined,
    'writeOutcome',
    unwritten,
  ],
  [
    'restarted, nothing recorded: the attempt is executed (or found interrupted)',
    run({ phase: 'Running', pod: POD }),
    undefined,
    'execute',
  ],
];

test.each(cases)('%s', (_name, r, l, expected, extra = {}) => {
  expect(planRun({ run: r, podUID: POD, runtime: 'python', local: l, nowMs: NOW, ...extra }).type).toBe(expected);
});

test('lifetime counts spec.timeout from startTime; no timeout or no start means none', () => {
  expect(remainingLifetimeMs(run({ timeout: '1m30s', startedSecondsAgo: 30 }), NOW)).toBe(60_000);
  expect(remainingLifetimeMs(run({ startedSecondsAgo: 30 }), NOW)).toBeUndefined();
  expect(remainingLifetimeMs(run({ timeout: '10s' }), NOW)).toBeUndefined();
});

test.each([
  ['no idle timeout', undefined, new Date(NOW - 60_000), 0, undefined],
  ['idle for 60 s of 30', 30, new Date(NOW - 60_000), 0, -30_000],
  ['idle for 10 s of 30', 30, new Date(NOW - 10_000), 0, 20_000],
  ['an invocation in flight never idles', 30, new Date(NOW - 60_000), 1, 30_000],
  ['no clock yet', 30, undefined, 0, undefined],
] as const)('idle: %s', (_name, idle, last, inFlight, expected) => {
  expect(remainingIdleMs(idle, last, inFlight, NOW)).toBe(expected);
});

interface RecordedRun {
  phase?: RunPhase;
  attempt?: number;
  deleting?: boolean;
  uid?: string;
}

const recordedRun = ({ phase, attempt = 1, deleting = false, uid = UID }: RecordedRun): Run => {
  const r = run({ pod: POD, attempt, deleting, ...(phase === undefined ? {} : { phase }) });
  return { ...r, metadata: { ...r.metadata, uid } };
};

// The record of how attempt 1 ended on this Pod, against the cached Run.
test.each([
  ['the Run is gone', undefined, 'drop'],
  ['the name holds another Run', recordedRun({ phase: 'Running', uid: '44444444-4444-4444-8444-444444444444' }), 'drop'],
  ['Running at the attempt: to be written', recordedRun({ phase: 'Running' }), 'keep'],
  ['Ready at the attempt (a function; the write is refused, which drops it)', recordedRun({ phase: 'Ready' }), 'keep'],
  ['a cache behind the claim: Scheduled at the attempt', recordedRun({ phase: 'Scheduled' }), 'keep'],
  ['a cache behind the bind: Pending at the attempt', recordedRun({ phase: 'Pending' }), 'keep'],
  ['a cache behind the attempt itself', recordedRun({ phase: 'Pending', attempt: 0 }), 'keep'],
  ['the Run went on to another attempt', recordedRun({ phase: 'Pending', attempt: 2 }), 'drop'],
  ['another attempt running', recordedRun({ phase: 'Running', attempt: 2 }), 'drop'],
  ['the outcome was written', recordedRun({ phase: 'Succeeded' }), 'drop'],
  ['ended otherwise (Cancelled)', recordedRun({ phase: 'Cancelled' }), 'drop'],
  ['waiting for input', recordedRun({ phase: 'WaitingInput' }), 'drop'],
  ['being deleted', recordedRun({ phase: 'Running', deleting: true }), 'drop'],
] as const)('outcome record: %s', (_name, r, expected) => {
  expect(decideOutcomeRecord({ uid: UID, attempt: 1 }, r).type).toBe(expected);
});
