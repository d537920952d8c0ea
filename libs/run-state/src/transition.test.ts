import { BOUNDS, RUN_PHASES } from '@kruntimes/api';
import type { LocalRunResult, Run, RunOrigin, RunPhase, RunSpec, RunStatus } from '@kruntimes/api';
import { isKruntimesError } from '@kruntimes/errors';
import { TransitionRefusedError, transition } from './transition.ts';
import type { RunEvent, RunEventType, TransitionResult, WriterRole } from './transition.ts';

const NOW = '2026-06-01T12:00:00.000Z';
const EARLIER = '2026-06-01T11:00:00.000Z';
const WRITERS: readonly WriterRole[] = ['scheduler', 'runtimed', 'stale-recovery', 'controller-manager'];

const DIGEST = `sha256:${'ab'.repeat(32)}`;
const SCHEMA = '{"type":"object","required":["approved"]}';
const WAITING: RunStatus = {
  attempt: 1,
  waitingInput: { schema: SCHEMA, checkpoint: { attempt: 1, digest: DIGEST, size: 12 }, since: EARLIER },
};

function makeRun(phase: RunPhase | undefined, spec: Partial<RunSpec> = {}, status: RunStatus = {}): Run {
  const assigned = phase !== undefined && phase !== 'Pending' && phase !== 'WaitingInput';
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'r', namespace: 'ns', uid: 'uid-1', generation: 2 },
    spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} }, ...spec },
    status: {
      ...(phase === undefined ? {} : { phase }),
      ...(assigned ? { assignedPod: 'pod-a', assignedPodUID: 'pod-uid-a', attempt: 1 } : {}),
      ...status,
    },
  };
}

/** spec.origin of a Run that `krt sync` created from a local run; `result` overrides the recorded result. */
function localOrigin(result: Partial<LocalRunResult> = {}): RunOrigin {
  return {
    local: {
      runId: '20260601-110000-a1b2c3',
      lockDigest: `sha256:${'a'.repeat(64)}`,
      result: {
        phase: 'Succeeded',
        reason: 'Succeeded',
        message: 'completed',
        exitCode: 0,
        outputs: { answer: '42' },
        startTime: '2026-06-01T10:59:00Z',
        completionTime: '2026-06-01T11:00:00Z',
        ...result,
      },
    },
  };
}

const functionMode: Partial<RunSpec> = { mode: { function: { handler: 'main' } } };

/** One event of each type, with the spec it needs for its preconditions to hold. */
const samples: Record<RunEventType, { event: RunEvent; spec: Partial<RunSpec>; status?: RunStatus }> = {
  Unschedulable: { event: { type: 'Unschedulable', reason: 'NoCapacity', message: 'all Pods full' }, spec: {} },
  SourceResolved: { event: { type: 'SourceResolved', source: { digest: DIGEST, size: 8 } }, spec: {} },
  SourceUnresolved: { event: { type: 'SourceUnresolved', reason: 'SourceNotFound', message: 'ConfigMap src not found' }, spec: {} },
  SourceFailed: { event: { type: 'SourceFailed', reason: 'SourceNotFound', message: 'ConfigMap src not found for 5m' }, spec: {} },
  Bind: { event: { type: 'Bind', pod: 'pod-b', podUID: 'pod-uid-b' }, spec: {} },
  CancelBeforeAssignment: { event: { type: 'CancelBeforeAssignment' }, spec: { cancelRequested: true } },
  Claim: { event: { type: 'Claim' }, spec: {} },
  RefuseClaim: { event: { type: 'RefuseClaim', reason: 'PodAtCapacity', message: 'Pod pod-a holds 1 of 1' }, spec: {} },
  HandOver: { event: { type: 'HandOver', message: 'Pod pod-a is stopping' }, spec: functionMode },
  Registered: { event: { type: 'Registered', endpoint: { protocol: 'HTTPS', url: 'https://gw/v1/x:invoke' } }, spec: functionMode },
  RegistrationLost: { event: { type: 'RegistrationLost', message: 'runtime server restarted' }, spec: functionMode },
  Succeeded: { event: { type: 'Succeeded', outputs: { answer: '42' } }, spec: {} },
  Failed: { event: { type: 'Failed', reason: 'NonZeroExit', message: 'exit 3', exitCode: 3 }, spec: {} },
  TimedOut: { event: { type: 'TimedOut', reason: 'Timeout', message: 'lifetime over' }, spec: {} },
  CancelAccepted: { event: { type: 'CancelAccepted', message: 'stopping the task' }, spec: { cancelRequested: true } },
  Cancelled: { event: { type: 'Cancelled', message: 'stopped' }, spec: { cancelRequested: true } },
  Requeue: { event: { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 10, message: 'retrying' }, spec: functionMode },
  MarkRecovering: { event: { type: 'MarkRecovering', message: 'Pod lease expired' }, spec: {} },
  Recovered: { event: { type: 'Recovered', message: 'the owner holds the Run again' }, spec: functionMode },
  Interrupted: { event: { type: 'Interrupted', reason: 'OwnerLost', message: 'Pod gone' }, spec: {} },
  WaitForInput: { event: { type: 'WaitForInput', schema: SCHEMA, checkpoint: { digest: DIGEST, size: 12 } }, spec: {} },
  InputReceived: {
    event: { type: 'InputReceived', responseId: 'r-1', runInput: 'r-r-1', input: '{"approved":true}' },
    spec: {},
    status: WAITING,
  },
  WaitTimedOut: { event: { type: 'WaitTimedOut', message: 'spec.timeout 10m passed while waiting' }, spec: {}, status: WAITING },
  WaitCancelled: { event: { type: 'WaitCancelled', message: 'cancelled while waiting' }, spec: { cancelRequested: true }, status: WAITING },
  RecordOrigin: { event: { type: 'RecordOrigin' }, spec: { origin: localOrigin() } },
};

// The specification of docs/lifecycle.md, written out independently of TRANSITION_RULES.
const ACTIVE_OWNED: RunPhase[] = ['Scheduled', 'Running', 'Ready'];
const allowed: Record<RunEventType, { writers: WriterRole[]; from: RunPhase[] }> = {
  Unschedulable: { writers: ['scheduler'], from: ['Pending'] },
  SourceResolved: { writers: ['scheduler'], from: ['Pending'] },
  SourceUnresolved: { writers: ['scheduler'], from: ['Pending'] },
  SourceFailed: { writers: ['scheduler'], from: ['Pending'] },
  Bind: { writers: ['scheduler'], from: ['Pending'] },
  CancelBeforeAssignment: { writers: ['scheduler'], from: ['Pending'] },
  Claim: { writers: ['runtimed'], from: ['Scheduled'] },
  RefuseClaim: { writers: ['runtimed'], from: ['Scheduled'] },
  HandOver: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  Registered: { writers: ['runtimed'], from: ['Running'] },
  RegistrationLost: { writers: ['runtimed'], from: ['Ready'] },
  Succeeded: { writers: ['runtimed'], from: ['Running'] },
  Failed: { writers: ['runtimed', 'stale-recovery'], from: ACTIVE_OWNED },
  TimedOut: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  CancelAccepted: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  Cancelled: { writers: ['runtimed', 'stale-recovery'], from: ACTIVE_OWNED },
  Requeue: { writers: ['runtimed', 'stale-recovery'], from: ACTIVE_OWNED },
  MarkRecovering: { writers: ['stale-recovery'], from: ACTIVE_OWNED },
  Recovered: { writers: ['stale-recovery'], from: ACTIVE_OWNED },
  Interrupted: { writers: ['runtimed', 'stale-recovery'], from: ACTIVE_OWNED },
  WaitForInput: { writers: ['runtimed'], from: ['Running'] },
  InputReceived: { writers: ['controller-manager'], from: ['WaitingInput'] },
  WaitTimedOut: { writers: ['controller-manager'], from: ['WaitingInput'] },
  WaitCancelled: { writers: ['controller-manager'], from: ['WaitingInput'] },
  RecordOrigin: { writers: ['controller-manager'], from: ['Pending'] },
};

const expectedPhase: Record<RunEventType, RunPhase | 'same'> = {
  Unschedulable: 'Pending',
  SourceResolved: 'Pending',
  SourceUnresolved: 'Pending',
  SourceFailed: 'Failed',
  Bind: 'Scheduled',
  CancelBeforeAssignment: 'Cancelled',
  Claim: 'Running',
  RefuseClaim: 'Pending',
  HandOver: 'Pending',
  Registered: 'Ready',
  RegistrationLost: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  TimedOut: 'Timeout',
  CancelAccepted: 'same',
  Cancelled: 'Cancelled',
  Requeue: 'Pending',
  MarkRecovering: 'same',
  Recovered: 'same',
  Interrupted: 'Interrupted',
  WaitForInput: 'WaitingInput',
  InputReceived: 'Pending',
  WaitTimedOut: 'Timeout',
  WaitCancelled: 'Cancelled',
  RecordOrigin: 'Succeeded',
};

function expectOk(result: TransitionResult): RunStatus {
  if (!result.ok) throw new Error(`expected success, got ${result.error.message}`);
  return result.status;
}

function expectRefused(result: TransitionResult, refusal: TransitionRefusedError['refusal']): TransitionRefusedError {
  if (result.ok) throw new Error('expected a refusal');
  expect(result.error).toBeInstanceOf(TransitionRefusedError);
  expect(isKruntimesError(result.error, 'InvalidTransition')).toBe(true);
  expect(result.error.terminal).toBe(true);
  expect(result.error.refusal).toBe(refusal);
  return result.error;
}

const matrix = RUN_PHASES.flatMap((phase) =>
  (Object.keys(samples) as RunEventType[]).flatMap((eventType) => WRITERS.map((writer) => [phase, eventType, writer] as const)),
);

describe('every (phase, event, writer) combination', () => {
  it.each(matrix)('%s + %s by %s', (phase, eventType, writer) => {
    const { event, spec, status: sampleStatus } = samples[eventType];
    const run = makeRun(phase, spec, sampleStatus);
    const frozen = structuredClone(run);
    const result = transition({ run, event, writer, now: NOW });
    expect(run).toEqual(frozen); // never modifies its input

    const rule = allowed[eventType];
    if (!rule.writers.includes(writer)) {
      expectRefused(result, 'wrongWriter');
    } else if (!rule.from.includes(phase)) {
      expectRefused(result, 'wrongPhase');
    } else {
      const status = expectOk(result);
      const want = expectedPhase[eventType];
      expect(status.phase).toBe(want === 'same' ? phase : want);
      expect(status.observedGeneration).toBe(2);
      expect(status.mode).toBe(spec.mode?.function === undefined ? 'task' : 'function');
      const ready = status.conditions?.find((c) => c.type === 'Ready');
      expect(ready?.status).toBe(eventType === 'Registered' || (eventType === 'Recovered' && phase === 'Ready') ? 'True' : 'False');
      expect(ready?.reason).toBe(status.reason);
      expect(ready?.observedGeneration).toBe(2);
    }
  });

  it('covers every phase with at least one allowed and one refused event', () => {
    for (const phase of RUN_PHASES) {
      const outcomes = matrix
        .filter(([p]) => p === phase)
        .map(
          ([, eventType, writer]) =>
            transition({
              run: makeRun(phase, samples[eventType].spec, samples[eventType].status),
              event: samples[eventType].event,
              writer,
              now: NOW,
            }).ok,
        );
      expect(outcomes).toContain(false);
      if (['Pending', 'Scheduled', 'Running', 'Ready', 'WaitingInput'].includes(phase)) expect(outcomes).toContain(true);
    }
  });

  it('refuses everything in a terminal phase', () => {
    for (const phase of ['Succeeded', 'Failed', 'Timeout', 'Cancelled', 'Interrupted'] as const) {
      const successes = matrix
        .filter(([p]) => p === phase)
        .filter(
          ([, eventType, writer]) =>
            transition({
              run: makeRun(phase, samples[eventType].spec, samples[eventType].status),
              event: samples[eventType].event,
              writer,
              now: NOW,
            }).ok,
        );
      expect(successes).toEqual([]);
    }
  });

  it('in WaitingInput only the controller-manager (there is no owner) answers, times out or cancels', () => {
    const successes = matrix
      .filter(([p]) => p === 'WaitingInput')
      .filter(
        ([, eventType, writer]) =>
          transition({
            run: makeRun('WaitingInput', samples[eventType].spec, samples[eventType].status),
            event: samples[eventType].event,
            writer,
            now: NOW,
          }).ok,
      )
      .map(([, eventType, writer]) => `${eventType} by ${writer}`);
    expect(successes).toEqual([
      'InputReceived by controller-manager',
      'WaitTimedOut by controller-manager',
      'WaitCancelled by controller-manager',
    ]);
  });
});

describe('scheduler', () => {
  it('binds a Run with no status yet: assignment, attempt 1, Ready=False Scheduled', () => {
    const status = expectOk(transition({ run: makeRun(undefined), event: samples.Bind.event, writer: 'scheduler', now: NOW }));
    expect(status).toMatchObject({
      phase: 'Scheduled',
      assignedPod: 'pod-b',
      assignedPodUID: 'pod-uid-b',
      attempt: 1,
      reason: 'Scheduled',
    });
    expect(status.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'Scheduled', lastTransitionTime: NOW });
  });

  it('binds a retry at its attempt and clears notBefore once it has passed', () => {
    const run = makeRun('Pending', {}, { attempt: 2, notBefore: EARLIER });
    const status = expectOk(transition({ run, event: samples.Bind.event, writer: 'scheduler', now: NOW }));
    expect(status.attempt).toBe(2);
    expect(status).not.toHaveProperty('notBefore');
  });

  it.each([
    ['before the retry backoff ends', makeRun('Pending', {}, { attempt: 2, notBefore: '2026-06-01T12:00:01.000Z' }), samples.Bind.event],
    ['when cancel was requested', makeRun('Pending', { cancelRequested: true }), samples.Bind.event],
    ['with an empty Pod UID', makeRun('Pending'), { type: 'Bind', pod: 'p', podUID: '' } as const],
  ])('refuses to bind %s', (_name, run, event) => {
    expectRefused(transition({ run, event, writer: 'scheduler', now: NOW }), 'precondition');
  });

  it.each([
    ['NoCapacity', 'all Pods full'],
    ['NoReadyPods', 'the Runtime has no ready Pod'],
    ['RuntimeNotFound', 'no such Runtime'],
    ['WaitingForCapacity', 'waiting for a slot: Runtime py has 2 of 2 Pods ready, 4 of 4 slots used; at its maximum of 2 Pods'],
    ['RunSlotCapReached', 'namespace team-a holds all 2 of its run slots (annotation kruntimes.io/run-slots: "2")'],
  ] as const)('records why a Run cannot be placed: %s', (reason, message) => {
    const event = { type: 'Unschedulable', reason, message } as const;
    const status = expectOk(transition({ run: makeRun('Pending'), event, writer: 'scheduler', now: NOW }));
    expect(status).toMatchObject({ phase: 'Pending', reason, message });
  });

  it('moves a waiting Run from one Unschedulable reason to another (NoCapacity -> WaitingForCapacity)', () => {
    const run = makeRun('Pending', {}, { reason: 'NoCapacity', message: 'all 2 ready Pods are full' });
    const event = { type: 'Unschedulable', reason: 'WaitingForCapacity', message: 'waiting for a slot' } as const;
    const status = expectOk(transition({ run, event, writer: 'scheduler', now: NOW }));
    expect(status).toMatchObject({ phase: 'Pending', reason: 'WaitingForCapacity', message: 'waiting for a slot' });
  });

  it('cancels before assignment only when cancel was requested', () => {
    const status = expectOk(
      transition({
        run: makeRun('Pending', { cancelRequested: true }),
        event: samples.CancelBeforeAssignment.event,
        writer: 'scheduler',
        now: NOW,
      }),
    );
    expect(status).toMatchObject({ phase: 'Cancelled', reason: 'CancelledBeforeStart', completionTime: NOW });
    expectRefused(
      transition({ run: makeRun('Pending'), event: samples.CancelBeforeAssignment.event, writer: 'scheduler', now: NOW }),
      'precondition',
    );
  });
});

describe('source snapshot (scheduler)', () => {
  const SNAPSHOT = { digest: DIGEST, size: 8, configMapName: 'krt-src-abababababababababab' };
  const sourceCondition = (status: RunStatus) => status.conditions?.find((c) => c.type === 'SourceResolved');

  it('records the snapshot once: status.source, SourceResolved True, Ready False AwaitingSchedule', () => {
    const status = expectOk(
      transition({ run: makeRun(undefined), event: { type: 'SourceResolved', source: SNAPSHOT }, writer: 'scheduler', now: NOW }),
    );
    expect(status).toMatchObject({ phase: 'Pending', source: SNAPSHOT, reason: 'AwaitingSchedule' });
    expect(sourceCondition(status)).toMatchObject({
      status: 'True',
      reason: 'SourceSnapshotted',
      lastTransitionTime: NOW,
      observedGeneration: 2,
    });
  });

  it('records the same snapshot again (idempotent), never another one', () => {
    const run = makeRun('Pending', {}, { source: SNAPSHOT });
    expectOk(transition({ run, event: { type: 'SourceResolved', source: SNAPSHOT }, writer: 'scheduler', now: NOW }));
    const other = { digest: `sha256:${'cd'.repeat(32)}`, size: 8 };
    expectRefused(transition({ run, event: { type: 'SourceResolved', source: other }, writer: 'scheduler', now: NOW }), 'precondition');
  });

  it.each([
    ['a digest that is not sha256', { digest: 'md5:abc', size: 1 }],
    ['a size over the source bound', { digest: DIGEST, size: BOUNDS.inlineSourceBytes + 1 }],
    ['a negative size', { digest: DIGEST, size: -1 }],
  ])('refuses %s', (_name, source) => {
    expectRefused(
      transition({ run: makeRun('Pending'), event: { type: 'SourceResolved', source }, writer: 'scheduler', now: NOW }),
      'bounds',
    );
  });

  it('an unresolved source keeps the Run Pending with the reason; the False condition keeps its first time', () => {
    const event = { type: 'SourceUnresolved', reason: 'SourceForbidden', message: 'ConfigMap src: 403' } as const;
    const first = expectOk(transition({ run: makeRun(undefined), event, writer: 'scheduler', now: EARLIER }));
    expect(first).toMatchObject({ phase: 'Pending', reason: 'SourceForbidden' });
    expect(sourceCondition(first)).toMatchObject({ status: 'False', reason: 'SourceForbidden', lastTransitionTime: EARLIER });
    const again = expectOk(
      transition({
        run: makeRun('Pending', {}, first),
        event: { type: 'SourceUnresolved', reason: 'SourceNotFound', message: 'gone' },
        writer: 'scheduler',
        now: NOW,
      }),
    );
    expect(sourceCondition(again)).toMatchObject({ status: 'False', reason: 'SourceNotFound', lastTransitionTime: EARLIER });
  });

  it('fails a Run whose source stayed unresolvable, with the reason', () => {
    const event = { type: 'SourceFailed', reason: 'SourceTooLarge', message: 'over 262144 bytes' } as const;
    const status = expectOk(transition({ run: makeRun('Pending'), event, writer: 'scheduler', now: NOW }));
    expect(status).toMatchObject({ phase: 'Failed', reason: 'SourceTooLarge', completionTime: NOW });
    expect(sourceCondition(status)).toMatchObject({ status: 'False', reason: 'SourceTooLarge' });
  });

  it.each([
    ['SourceUnresolved', { type: 'SourceUnresolved', reason: 'SourceNotFound', message: 'x' }],
    ['SourceFailed', { type: 'SourceFailed', reason: 'SourceNotFound', message: 'x' }],
  ] as const)('%s is refused once the snapshot is recorded', (_name, event) => {
    expectRefused(transition({ run: makeRun('Pending', {}, { source: SNAPSHOT }), event, writer: 'scheduler', now: NOW }), 'precondition');
  });

  it('keeps status.source into a continuation after input', () => {
    const run = makeRun('WaitingInput', {}, { ...WAITING, source: SNAPSHOT });
    const status = expectOk(transition({ run, event: samples.InputReceived.event, writer: 'controller-manager', now: NOW }));
    expect(status).toMatchObject({ phase: 'Pending', attempt: 2, source: SNAPSHOT });
  });

  it('keeps status.source through a requeue (every attempt runs the snapshot)', () => {
    const run = makeRun('Running', { retryPolicy: { retrySafe: true, maxAttempts: 3 } }, { source: SNAPSHOT });
    const status = expectOk(transition({ run, event: samples.Requeue.event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Pending', attempt: 2, source: SNAPSHOT });
  });
});

describe('runtimed', () => {
  it('claims: Running with startTime, Registering for functions and Executing for tasks', () => {
    const task = expectOk(transition({ run: makeRun('Scheduled'), event: { type: 'Claim' }, writer: 'runtimed', now: NOW }));
    expect(task).toMatchObject({ phase: 'Running', startTime: NOW, reason: 'Executing' });
    const fn = expectOk(transition({ run: makeRun('Scheduled', functionMode), event: { type: 'Claim' }, writer: 'runtimed', now: NOW }));
    expect(fn.reason).toBe('Registering');
  });

  describe('refuses a claim beyond the Pod capacity (RefuseClaim)', () => {
    const refuse: RunEvent = { type: 'RefuseClaim', reason: 'PodAtCapacity', message: 'Pod pod-a already holds 1 of its 1 Runs' };

    it('gives the Run back: Pending, the assignment cleared, the attempt kept, Ready=False PodAtCapacity', () => {
      const run = makeRun('Scheduled', functionMode, { attempt: 2, startTime: EARLIER, reportSequence: 3 });
      const status = expectOk(transition({ run, event: refuse, writer: 'runtimed', now: NOW, sequence: 4 }));
      expect(status).toMatchObject({
        phase: 'Pending',
        attempt: 2,
        startTime: EARLIER,
        reason: 'PodAtCapacity',
        message: 'Pod pod-a already holds 1 of its 1 Runs',
        // The same attempt goes on: its count of reports too.
        reportSequence: 4,
      });
      expect(status).not.toHaveProperty('assignedPod');
      expect(status).not.toHaveProperty('assignedPodUID');
      expect(status).not.toHaveProperty('notBefore');
      expect(status.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'PodAtCapacity', lastTransitionTime: NOW });
    });

    it('also with cancel requested: the scheduler then ends it before assignment', () => {
      const refused = expectOk(
        transition({ run: makeRun('Scheduled', { cancelRequested: true }), event: refuse, writer: 'runtimed', now: NOW }),
      );
      const pending = makeRun('Pending', { cancelRequested: true }, refused);
      const cancelled = expectOk(transition({ run: pending, event: samples.CancelBeforeAssignment.event, writer: 'scheduler', now: NOW }));
      expect(cancelled).toMatchObject({ phase: 'Cancelled', reason: 'CancelledBeforeStart', attempt: 1 });
    });

    it('the scheduler binds it again at the same attempt, on another Pod', () => {
      const refused = expectOk(transition({ run: makeRun('Scheduled'), event: refuse, writer: 'runtimed', now: NOW, sequence: 1 }));
      const bound = expectOk(
        transition({ run: makeRun('Pending', {}, refused), event: samples.Bind.event, writer: 'scheduler', now: NOW }),
      );
      expect(bound).toMatchObject({ phase: 'Scheduled', attempt: 1, assignedPod: 'pod-b', assignedPodUID: 'pod-uid-b', reportSequence: 1 });
    });

    it('a claim already taken cannot be refused any more', () => {
      expectRefused(transition({ run: makeRun('Running'), event: refuse, writer: 'runtimed', now: NOW }), 'wrongPhase');
    });
  });

  it('keeps the first startTime across attempts', () => {
    const status = expectOk(
      transition({ run: makeRun('Scheduled', {}, { startTime: EARLIER }), event: { type: 'Claim' }, writer: 'runtimed', now: NOW }),
    );
    expect(status.startTime).toBe(EARLIER);
  });

  it('registers a function: Ready=True FunctionRegistered with the endpoint', () => {
    const status = expectOk(
      transition({ run: makeRun('Running', functionMode), event: samples.Registered.event, writer: 'runtimed', now: NOW }),
    );
    expect(status).toMatchObject({
      phase: 'Ready',
      reason: 'FunctionRegistered',
      endpoint: { protocol: 'HTTPS', url: 'https://gw/v1/x:invoke' },
    });
    expect(status.conditions?.[0]).toMatchObject({ status: 'True', lastTransitionTime: NOW });
  });

  it.each([
    ['a task', makeRun('Running'), samples.Registered.event, 'precondition'],
    ['a cancelled function', makeRun('Running', { ...functionMode, cancelRequested: true }), samples.Registered.event, 'precondition'],
    [
      'an endpoint URL over the bound',
      makeRun('Running', functionMode),
      { type: 'Registered', endpoint: { protocol: 'HTTPS', url: `https://${'x'.repeat(BOUNDS.endpointUrlBytes)}` } } as const,
      'bounds',
    ],
    [
      'a CA bundle over the bound',
      makeRun('Running', functionMode),
      {
        type: 'Registered',
        endpoint: { protocol: 'HTTPS', url: 'https://gw', caBundle: Buffer.alloc(BOUNDS.caBundleBytes + 1).toString('base64') },
      } as const,
      'bounds',
    ],
  ] as const)('refuses to register %s', (_name, run, event, refusal) => {
    expectRefused(transition({ run, event, writer: 'runtimed', now: NOW }), refusal);
  });

  it('loses a registration: back to Running, not ready, endpoint kept', () => {
    const run = makeRun('Ready', functionMode, { endpoint: { protocol: 'HTTPS', url: 'https://gw' } });
    const status = expectOk(transition({ run, event: samples.RegistrationLost.event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Running', reason: 'RegistrationLost', endpoint: { url: 'https://gw' } });
  });

  it('succeeds a task with bounded outputs and exit code 0', () => {
    const status = expectOk(transition({ run: makeRun('Running'), event: samples.Succeeded.event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Succeeded', outputs: { answer: '42' }, exitCode: 0, completionTime: NOW });
  });

  it.each([
    ['a function Run', makeRun('Running', functionMode), samples.Succeeded.event, 'precondition'],
    ['outputs over the bounds', makeRun('Running'), { type: 'Succeeded', outputs: { 'bad key': 'v' } } as const, 'bounds'],
  ] as const)('refuses success for %s', (_name, run, event, refusal) => {
    expectRefused(transition({ run, event, writer: 'runtimed', now: NOW }), refusal);
  });

  describe('artifacts of a succeeded task', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const declared: Partial<RunSpec> = {
      artifacts: {
        store: 'store',
        outputs: [
          { id: 'report.csv', maxBytes: 100, mediaType: 'text/csv' },
          { id: 'extra', maxBytes: 10, mediaType: 'application/json', optional: true },
        ],
      },
    };
    const report = { id: 'report.csv', digest, size: 100, mediaType: 'text/csv' };

    it('records the verified artifacts with the outcome', () => {
      const event: RunEvent = { type: 'Succeeded', artifacts: [report] };
      const status = expectOk(transition({ run: makeRun('Running', declared), event, writer: 'runtimed', now: NOW }));
      expect(status).toMatchObject({ phase: 'Succeeded', artifacts: [report] });
      expect(status.artifacts?.[0]).not.toBe(report);
    });

    it.each<[string, Partial<RunSpec>, RunEvent, TransitionRefusedError['refusal'], string]>([
      ['a required one missing', declared, { type: 'Succeeded' }, 'precondition', 'required artifacts missing: report.csv'],
      [
        'an undeclared one',
        declared,
        { type: 'Succeeded', artifacts: [report, { ...report, id: 'other' }] },
        'precondition',
        'other is not declared',
      ],
      ['one listed twice', declared, { type: 'Succeeded', artifacts: [report, report] }, 'precondition', 'listed twice'],
      ['a bad digest', declared, { type: 'Succeeded', artifacts: [{ ...report, digest: 'md5:x' }] }, 'bounds', 'digest'],
      ['one over its maxBytes', declared, { type: 'Succeeded', artifacts: [{ ...report, size: 101 }] }, 'bounds', 'over its maxBytes 100'],
      ['a negative size', declared, { type: 'Succeeded', artifacts: [{ ...report, size: -1 }] }, 'bounds', 'size -1'],
      [
        'another media type',
        declared,
        { type: 'Succeeded', artifacts: [{ ...report, mediaType: 'text/plain' }] },
        'precondition',
        'not the declared text/csv',
      ],
      ['artifacts of a Run that declares none', {}, { type: 'Succeeded', artifacts: [report] }, 'precondition', 'declares no artifacts'],
      [
        'more than the bound',
        declared,
        { type: 'Succeeded', artifacts: Array.from({ length: BOUNDS.artifactCount + 1 }, () => report) },
        'bounds',
        `at most ${String(BOUNDS.artifactCount)}`,
      ],
    ])('refuses success with %s', (_name, spec, event, refusal, detail) => {
      const error = expectRefused(transition({ run: makeRun('Running', spec), event, writer: 'runtimed', now: NOW }), refusal);
      expect(error.message).toContain(detail);
    });

    it('an optional one may be missing', () => {
      const event: RunEvent = { type: 'Succeeded', artifacts: [report] };
      expectOk(transition({ run: makeRun('Running', declared), event, writer: 'runtimed', now: NOW }));
    });

    it.each(['ArtifactMissing', 'ArtifactInvalid'] as const)('fails with %s', (reason) => {
      const event: RunEvent = { type: 'Failed', reason, message: 'report.csv is not in the store' };
      expect(expectOk(transition({ run: makeRun('Running', declared), event, writer: 'runtimed', now: NOW }))).toMatchObject({
        phase: 'Failed',
        reason,
      });
    });
  });

  it('fails with the exit code and a bounded message', () => {
    const event: RunEvent = { type: 'Failed', reason: 'NonZeroExit', message: 'm'.repeat(BOUNDS.messageBytes * 2), exitCode: 7 };
    const status = expectOk(transition({ run: makeRun('Running'), event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Failed', reason: 'NonZeroExit', exitCode: 7 });
    expect(Buffer.byteLength(status.message ?? '')).toBeLessThanOrEqual(BOUNDS.messageBytes);
  });

  it('times out with IdleTimeout', () => {
    const status = expectOk(
      transition({
        run: makeRun('Ready', functionMode),
        event: { type: 'TimedOut', reason: 'IdleTimeout', message: 'idle' },
        writer: 'runtimed',
        now: NOW,
      }),
    );
    expect(status).toMatchObject({ phase: 'Timeout', reason: 'IdleTimeout' });
  });

  // Cancel wins over a late report: once spec.cancelRequested is stored, the Run ends
  // Cancelled whatever the code reported after it, and keeps the report for the record.
  it.each([
    [
      'a late success (exit 0 and outputs)',
      makeRun('Running', { cancelRequested: true }),
      samples.Succeeded.event,
      'runtimed',
      { exitCode: 0, outputs: { answer: '42' } },
      'the task then exited 0 (outputs: answer)',
    ],
    [
      'a late success of a task being cancelled (reason Cancelling)',
      makeRun('Running', { cancelRequested: true }, { reason: 'Cancelling' }),
      { type: 'Succeeded' } as const,
      'runtimed',
      { exitCode: 0 },
      'the task then exited 0',
    ],
    [
      'a late non-zero exit',
      makeRun('Running', { cancelRequested: true }),
      samples.Failed.event,
      'runtimed',
      { exitCode: 3 },
      'the attempt then failed (NonZeroExit): exit 3',
    ],
    [
      'a failure by stale-recovery',
      makeRun('Running', { cancelRequested: true }),
      { type: 'Failed', reason: 'RetriesExhausted', message: 'owner lost' } as const,
      'stale-recovery',
      {},
      'owner lost',
    ],
    ['a late timeout', makeRun('Running', { cancelRequested: true }), samples.TimedOut.event, 'runtimed', {}, 'then timed out (Timeout)'],
  ] as const)('a stored cancel wins over %s: Cancelled, the report recorded', (_name, run, event, writer, recorded, message) => {
    const status = expectOk(transition({ run, event, writer, now: NOW }));
    expect(status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', completionTime: NOW, ...recorded });
    expect(status.message).toContain('cancel requested before the outcome was recorded');
    expect(status.message).toContain(message);
    expect(status.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'Cancelled' });
  });

  it('accepts a cancel: the phase stays, Ready=False Cancelling, for a task and for a Ready function', () => {
    const task = expectOk(
      transition({ run: makeRun('Running', { cancelRequested: true }), event: samples.CancelAccepted.event, writer: 'runtimed', now: NOW }),
    );
    expect(task).toMatchObject({ phase: 'Running', reason: 'Cancelling', message: 'stopping the task' });
    expect(task).not.toHaveProperty('completionTime');
    expect(task.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'Cancelling' });
    const run = makeRun('Ready', { ...functionMode, cancelRequested: true }, { endpoint: { protocol: 'HTTPS', url: 'https://gw' } });
    const fn = expectOk(transition({ run, event: samples.CancelAccepted.event, writer: 'runtimed', now: NOW }));
    expect(fn).toMatchObject({ phase: 'Ready', reason: 'Cancelling', endpoint: { url: 'https://gw' } });
    expect(fn.conditions?.[0]).toMatchObject({ status: 'False', reason: 'Cancelling' });
  });

  it('refuses to accept a cancel that was not requested', () => {
    expectRefused(
      transition({ run: makeRun('Running'), event: samples.CancelAccepted.event, writer: 'runtimed', now: NOW }),
      'precondition',
    );
  });

  it('cancels with the exit code the stopped task reported', () => {
    const status = expectOk(
      transition({
        run: makeRun('Running', { cancelRequested: true }, { reason: 'Cancelling' }),
        event: { type: 'Cancelled', message: 'stopped', exitCode: 0 },
        writer: 'runtimed',
        now: NOW,
      }),
    );
    expect(status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', exitCode: 0 });
  });

  it('cancels only when cancel was requested', () => {
    expectRefused(transition({ run: makeRun('Running'), event: samples.Cancelled.event, writer: 'runtimed', now: NOW }), 'precondition');
    const status = expectOk(
      transition({ run: makeRun('Scheduled', { cancelRequested: true }), event: samples.Cancelled.event, writer: 'runtimed', now: NOW }),
    );
    expect(status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled' });
  });

  it('requeues its own failed attempt: Pending, attempt + 1, assignment cleared, notBefore after the backoff', () => {
    const run = makeRun('Running', { retryPolicy: { maxAttempts: 3, retrySafe: true } }, { startTime: EARLIER });
    const status = expectOk(transition({ run, event: samples.Requeue.event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({
      phase: 'Pending',
      attempt: 2,
      notBefore: '2026-06-01T12:00:10.000Z',
      reason: 'RetryBackoff',
      startTime: EARLIER,
    });
    expect(status).not.toHaveProperty('assignedPod');
    expect(status).not.toHaveProperty('assignedPodUID');
  });

  it.each([
    ['no attempts are left', makeRun('Running', { retryPolicy: { maxAttempts: 1 } }), samples.Requeue.event, 'precondition'],
    // A task that is not retrySafe runs once: its default is one attempt.
    ['a task is not retrySafe (default policy)', makeRun('Running'), samples.Requeue.event, 'precondition'],
    [
      'a task is not retrySafe (maxAttempts stored before the CRD refused it)',
      makeRun('Running', { retryPolicy: { maxAttempts: 3, retrySafe: false } }),
      samples.Requeue.event,
      'precondition',
    ],
    ['cancel was requested', makeRun('Running', { cancelRequested: true }), samples.Requeue.event, 'precondition'],
    ['the backoff is negative', makeRun('Running'), { ...samples.Requeue.event, backoffSeconds: -1 } as RunEvent, 'precondition'],
    [
      'runtimed claims a lost owner',
      makeRun('Running', functionMode),
      { type: 'Requeue', cause: 'ownerLost', backoffSeconds: 0, message: '' } as const,
      'wrongWriter',
    ],
  ] as const)('refuses to requeue when %s', (_name, run, event, refusal) => {
    expectRefused(transition({ run, event, writer: 'runtimed', now: NOW }), refusal);
  });
});

describe('runtimed hands a function Run over when its Pod is told to stop (HandOver)', () => {
  const handOver: RunEvent = { type: 'HandOver', message: 'Pod pod-a is stopping; unregistered after the in-flight invocation' };
  const ENDPOINT = { protocol: 'HTTPS', url: 'https://gw/v1/x:invoke' } as const;

  it.each(['Running', 'Ready'] as const)(
    'from %s: Pending, attempt + 1, assignment cleared, plannedMoves + 1, reason Drained, no backoff',
    (phase) => {
      const run = makeRun(phase, functionMode, { startTime: EARLIER, endpoint: ENDPOINT, notBefore: EARLIER, reportSequence: 4 });
      const status = expectOk(transition({ run, event: handOver, writer: 'runtimed', now: NOW }));
      expect(status).toMatchObject({ phase: 'Pending', attempt: 2, plannedMoves: 1, reason: 'Drained', startTime: EARLIER });
      expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Drained' });
      for (const field of ['assignedPod', 'assignedPodUID', 'notBefore', 'reportSequence']) expect(status).not.toHaveProperty(field);
      // The endpoint is the gateway's URL of the Run, the same for every attempt (as through a Requeue).
      expect(status.endpoint).toEqual(ENDPOINT);
    },
  );

  it('counts every move: plannedMoves never decreases', () => {
    const run = makeRun('Ready', functionMode, { attempt: 4, plannedMoves: 3 });
    expect(expectOk(transition({ run, event: handOver, writer: 'runtimed', now: NOW }))).toMatchObject({ attempt: 5, plannedMoves: 4 });
  });

  it('does not spend the retry budget: a function moved twice still has all its attempts for failures', () => {
    const policy = { retryPolicy: { maxAttempts: 2 } };
    const moved = makeRun('Ready', { ...functionMode, ...policy }, { attempt: 3, plannedMoves: 2 });
    const failed = { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 0, message: 'exit 1' } as const;
    expect(expectOk(transition({ run: moved, event: failed, writer: 'runtimed', now: NOW }))).toMatchObject({ attempt: 4 });
    const spent = makeRun('Ready', { ...functionMode, ...policy }, { attempt: 4, plannedMoves: 2 });
    expectRefused(transition({ run: spent, event: failed, writer: 'runtimed', now: NOW }), 'precondition');
  });

  it.each([
    ['a task (it runs to its end or is interrupted)', makeRun('Running'), 'precondition'],
    ['cancel was requested (the owner cancels instead)', makeRun('Ready', { ...functionMode, cancelRequested: true }), 'precondition'],
    ['Scheduled (nothing registered: the claim is refused instead)', makeRun('Scheduled', functionMode), 'wrongPhase'],
  ] as const)('is refused for %s', (_name, run, refusal) => {
    expectRefused(transition({ run, event: handOver, writer: 'runtimed', now: NOW }), refusal);
  });

  it('refuses a claim on a stopping Pod at the same attempt (RefuseClaim PodDraining)', () => {
    const event: RunEvent = { type: 'RefuseClaim', reason: 'PodDraining', message: 'Pod pod-a is stopping' };
    const status = expectOk(transition({ run: makeRun('Scheduled', functionMode), event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Pending', attempt: 1, reason: 'PodDraining' });
    expect(status).not.toHaveProperty('assignedPodUID');
    expect(status.plannedMoves).toBeUndefined();
  });

  it('ends a task still running at the end of the drain window Interrupted, DrainWindowExceeded', () => {
    const event: RunEvent = { type: 'Interrupted', reason: 'DrainWindowExceeded', message: 'still running after 300 s' };
    const status = expectOk(transition({ run: makeRun('Running'), event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Interrupted', reason: 'DrainWindowExceeded', completionTime: NOW });
  });

  it('ends a task whose Runtime Server restarted during it Interrupted, RuntimeServerLost', () => {
    const event: RunEvent = { type: 'Interrupted', reason: 'RuntimeServerLost', message: 'not retried: lost the execution' };
    const status = expectOk(transition({ run: makeRun('Running'), event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Interrupted', reason: 'RuntimeServerLost', completionTime: NOW });
  });
});

describe('stale-recovery', () => {
  const ownerLost: RunEvent = { type: 'Requeue', cause: 'ownerLost', backoffSeconds: 0, message: 'owner Pod gone' };

  it('marks a Run recovering without changing its phase', () => {
    const status = expectOk(
      transition({ run: makeRun('Ready', functionMode), event: samples.MarkRecovering.event, writer: 'stale-recovery', now: NOW }),
    );
    expect(status).toMatchObject({ phase: 'Ready', reason: 'Recovering' });
    expect(status.conditions?.[0]?.status).toBe('False');
  });

  it.each([
    ['a function Run', makeRun('Ready', functionMode), true],
    ['a retrySafe task', makeRun('Running', { retryPolicy: { retrySafe: true } }), true],
    ['a task that is not retrySafe', makeRun('Running'), false],
    ['a task that was never claimed (no code ran)', makeRun('Scheduled'), true],
  ] as const)('requeues %s after the fence: %s', (_name, run, ok) => {
    const result = transition({ run, event: ownerLost, writer: 'stale-recovery', now: NOW });
    if (ok) expect(expectOk(result)).toMatchObject({ phase: 'Pending', attempt: 2 });
    else expectRefused(result, 'precondition');
  });

  it.each([
    ['Ready', functionMode, 'True', 'FunctionRegistered'],
    ['Running', functionMode, 'False', 'Registering'],
    ['Running', {}, 'False', 'Executing'],
    ['Scheduled', {}, 'False', 'Scheduled'],
  ] as const)('Recovered restores what a %s Run says (%o)', (phase, spec, ready, reason) => {
    const recovering = expectOk(
      transition({ run: makeRun(phase, spec), event: samples.MarkRecovering.event, writer: 'stale-recovery', now: EARLIER }),
    );
    const run = { ...makeRun(phase, spec), status: recovering };
    const status = expectOk(transition({ run, event: samples.Recovered.event, writer: 'stale-recovery', now: NOW }));
    expect(status).toMatchObject({ phase, reason });
    expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: ready, reason });
  });

  it('Recovered never overwrites a reason the owner wrote', () => {
    const lost = expectOk(
      transition({ run: makeRun('Ready', functionMode), event: samples.RegistrationLost.event, writer: 'runtimed', now: NOW }),
    );
    expectRefused(
      transition({
        run: { ...makeRun('Running', functionMode), status: lost },
        event: samples.Recovered.event,
        writer: 'stale-recovery',
        now: NOW,
      }),
      'precondition',
    );
    expectRefused(
      transition({ run: makeRun('Ready'), event: samples.Recovered.event, writer: 'stale-recovery', now: NOW }),
      'precondition',
    );
  });

  it('interrupts and fails', () => {
    expect(
      expectOk(transition({ run: makeRun('Running'), event: samples.Interrupted.event, writer: 'stale-recovery', now: NOW })),
    ).toMatchObject({
      phase: 'Interrupted',
      reason: 'OwnerLost',
      completionTime: NOW,
    });
    const exhausted: RunEvent = { type: 'Failed', reason: 'RetriesExhausted', message: '3 attempts' };
    expect(expectOk(transition({ run: makeRun('Ready', functionMode), event: exhausted, writer: 'stale-recovery', now: NOW })).reason).toBe(
      'RetriesExhausted',
    );
  });
});

describe('report sequence (an older report of an attempt never overwrites a newer one)', () => {
  const running = (reportSequence?: number): Run => makeRun('Running', {}, reportSequence === undefined ? {} : { reportSequence });
  const succeeded: RunEvent = { type: 'Succeeded' };
  const statusOf = (result: TransitionResult): RunStatus | undefined => (result.ok ? result.status : undefined);

  it.each([
    ['the first numbered report of an attempt', undefined, 1, { ok: true, reportSequence: 1 }],
    ['a newer report', 4, 5, { ok: true, reportSequence: 5 }],
    ['a report with a gap (reports in between were refused or lost)', 4, 9, { ok: true, reportSequence: 9 }],
    ['the same report again', 5, 5, { ok: false }],
    ['an older report', 5, 4, { ok: false }],
    ['an unnumbered write (another writer) keeps the number', 5, undefined, { ok: true, reportSequence: 5 }],
  ] as const)('%s: recorded %s, report %s', (_name, recorded, sequence, expected) => {
    const result = transition({
      run: running(recorded),
      event: succeeded,
      writer: 'runtimed',
      now: NOW,
      ...(sequence === undefined ? {} : { sequence }),
    });
    expect(result.ok).toBe(expected.ok);
    if (!expected.ok) {
      expect(result.ok ? undefined : result.error.refusal).toBe('staleReport');
      expect(result.ok ? '' : result.error.message).toMatch(/report \d+ of attempt 1 is not newer than the recorded 5/);
    } else {
      expect(statusOf(result)?.reportSequence).toBe(expected.reportSequence);
    }
  });

  it('a new attempt starts its own count: a requeue clears the number, and its first report is 1 again', () => {
    const run = makeRun('Running', functionMode, { reportSequence: 7 });
    const requeued = transition({
      run,
      event: { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 0, message: 'retrying' },
      writer: 'runtimed',
      now: NOW,
      sequence: 8,
    });
    expect(statusOf(requeued)).toMatchObject({ phase: 'Pending', attempt: 2 });
    expect(statusOf(requeued)?.reportSequence).toBeUndefined();
  });

  it('a newer report still goes through the table: a wrong writer is refused', () => {
    const result = transition({
      run: running(2),
      event: { type: 'Bind', pod: 'p', podUID: 'u' },
      writer: 'runtimed',
      now: NOW,
      sequence: 3,
    });
    expect(result.ok ? undefined : result.error.refusal).toBe('wrongWriter');
  });
});

describe('waiting for input (checkpoint-v1)', () => {
  const waiting = (spec: Partial<RunSpec> = {}, status: RunStatus = {}): Run => makeRun('WaitingInput', spec, { ...WAITING, ...status });
  const wait: Extract<RunEvent, { type: 'WaitForInput' }> = {
    type: 'WaitForInput',
    schema: SCHEMA,
    checkpoint: { digest: DIGEST, size: 12 },
  };

  it('WaitForInput: WaitingInput, the Pod released, the schema and the checkpoint of this attempt recorded', () => {
    const run = makeRun('Running', {}, { attempt: 3 });
    const status = expectOk(transition({ run, event: wait, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({
      phase: 'WaitingInput',
      attempt: 3,
      reason: 'WaitingInput',
      waitingInput: { schema: SCHEMA, checkpoint: { attempt: 3, digest: DIGEST, size: 12 }, since: NOW },
    });
    expect(status).not.toHaveProperty('assignedPod');
    expect(status).not.toHaveProperty('assignedPodUID');
    expect(status).not.toHaveProperty('completionTime');
  });

  it.each<[string, Partial<RunSpec>, RunEvent, TransitionRefusedError['refusal']]>([
    ['a function Run', functionMode, wait, 'precondition'],
    ['a cancelled Run', { cancelRequested: true }, wait, 'precondition'],
    ['a schema that is not JSON', {}, { ...wait, schema: '{' }, 'precondition'],
    ['a schema that is a string', {}, { ...wait, schema: '"object"' }, 'precondition'],
    ['a schema over the bound', {}, { ...wait, schema: JSON.stringify({ description: 'x'.repeat(BOUNDS.inputSchemaBytes) }) }, 'bounds'],
    ['a digest that is not sha256', {}, { ...wait, checkpoint: { digest: 'md5:00', size: 1 } }, 'bounds'],
    ['a checkpoint over 1 MiB', {}, { ...wait, checkpoint: { digest: DIGEST, size: BOUNDS.checkpointBytes + 1 } }, 'bounds'],
    ['a negative size', {}, { ...wait, checkpoint: { digest: DIGEST, size: -1 } }, 'bounds'],
  ])('WaitForInput refuses %s', (_name, spec, event, refusal) => {
    expectRefused(transition({ run: makeRun('Running', spec), event, writer: 'runtimed', now: NOW }), refusal);
  });

  it('accepts a boolean schema (true: anything goes)', () => {
    expectOk(transition({ run: makeRun('Running'), event: { ...wait, schema: 'true' }, writer: 'runtimed', now: NOW }));
  });

  it('InputReceived: Pending at attempt + 1, resuming from the checkpoint with the response, recorded once', () => {
    const status = expectOk(
      transition({ run: waiting({}, { notBefore: EARLIER }), event: samples.InputReceived.event, writer: 'controller-manager', now: NOW }),
    );
    expect(status).toMatchObject({
      phase: 'Pending',
      attempt: 2,
      reason: 'InputReceived',
      resume: {
        checkpoint: { attempt: 1, digest: DIGEST, size: 12 },
        responseId: 'r-1',
        runInput: 'r-r-1',
        input: '{"approved":true}',
        attempt: 2,
      },
      responses: [{ responseId: 'r-1', runInput: 'r-r-1', attempt: 2, time: NOW }],
    });
    expect(status).not.toHaveProperty('waitingInput');
    expect(status).not.toHaveProperty('notBefore');
  });

  it('InputReceived refuses a response ID the Run already accepted', () => {
    const run = waiting({}, { attempt: 2, responses: [{ responseId: 'r-1', runInput: 'x', attempt: 2, time: EARLIER }] });
    const error = expectRefused(
      transition({ run, event: samples.InputReceived.event, writer: 'controller-manager', now: NOW }),
      'precondition',
    );
    expect(error.message).toContain('DuplicateResponse');
  });

  it('InputReceived keeps only the latest responses', () => {
    const responses = Array.from({ length: BOUNDS.responsesKept }, (_, i) => ({
      responseId: `old-${String(i)}`,
      runInput: `in-${String(i)}`,
      attempt: i + 2,
      time: EARLIER,
    }));
    const status = expectOk(
      transition({
        run: waiting({}, { attempt: 20, responses }),
        event: samples.InputReceived.event,
        writer: 'controller-manager',
        now: NOW,
      }),
    );
    expect(status.responses).toHaveLength(BOUNDS.responsesKept);
    expect(status.responses?.at(-1)?.responseId).toBe('r-1');
    expect(status.responses?.[0]?.responseId).toBe('old-1');
  });

  it.each<[string, Run, RunEvent, TransitionRefusedError['refusal']]>([
    ['cancel was requested', waiting({ cancelRequested: true }), samples.InputReceived.event, 'precondition'],
    ['no waitingInput recorded', makeRun('WaitingInput', {}, { attempt: 1 }), samples.InputReceived.event, 'precondition'],
    [
      'a response over the bound',
      waiting(),
      { type: 'InputReceived', responseId: 'r-2', runInput: 'x', input: JSON.stringify('x'.repeat(BOUNDS.inputDataBytes)) },
      'bounds',
    ],
  ])('InputReceived refuses when %s', (_name, run, event, refusal) => {
    expectRefused(transition({ run, event, writer: 'controller-manager', now: NOW }), refusal);
  });

  it('WaitTimedOut ends Timeout (Cancelled once cancel was requested) and drops the schema', () => {
    const timedOut = expectOk(transition({ run: waiting(), event: samples.WaitTimedOut.event, writer: 'controller-manager', now: NOW }));
    expect(timedOut).toMatchObject({ phase: 'Timeout', reason: 'Timeout', completionTime: NOW });
    expect(timedOut).not.toHaveProperty('waitingInput');
    const cancelled = expectOk(
      transition({ run: waiting({ cancelRequested: true }), event: samples.WaitTimedOut.event, writer: 'controller-manager', now: NOW }),
    );
    expect(cancelled.phase).toBe('Cancelled');
  });

  it('WaitCancelled needs the cancel request', () => {
    expectRefused(
      transition({ run: waiting(), event: samples.WaitCancelled.event, writer: 'controller-manager', now: NOW }),
      'precondition',
    );
    const status = expectOk(
      transition({ run: waiting({ cancelRequested: true }), event: samples.WaitCancelled.event, writer: 'controller-manager', now: NOW }),
    );
    expect(status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', completionTime: NOW });
  });

  it('a continuation starts a fresh retry budget: a failed attempt of it requeues even past maxAttempts overall', () => {
    const resumed: RunStatus = {
      attempt: 4,
      resume: { checkpoint: { attempt: 3, digest: DIGEST, size: 1 }, responseId: 'r', runInput: 'x', input: '{}', attempt: 4 },
    };
    const run = makeRun('Running', { retryPolicy: { retrySafe: true, maxAttempts: 2 } }, resumed);
    const event: RunEvent = { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 5, message: 'exit 1' };
    const status = expectOk(transition({ run, event, writer: 'runtimed', now: NOW }));
    expect(status).toMatchObject({ phase: 'Pending', attempt: 5, resume: { attempt: 4 } });
    // the second attempt of the continuation was its last
    const last = makeRun('Running', { retryPolicy: { retrySafe: true, maxAttempts: 2 } }, { ...resumed, attempt: 5 });
    expectRefused(transition({ run: last, event, writer: 'runtimed', now: NOW }), 'precondition');
  });
});

describe('controller-manager: RecordOrigin (a Run executed by krt run --local, synced)', () => {
  const record = (spec: Partial<RunSpec>, status: RunStatus = {}): TransitionResult =>
    transition({ run: makeRun('Pending', spec, status), event: { type: 'RecordOrigin' }, writer: 'controller-manager', now: NOW });

  it('moves Pending straight to the recorded phase with its times, exit code, outputs and reason', () => {
    const status = expectOk(record({ origin: localOrigin() }));
    expect(status).toMatchObject({
      phase: 'Succeeded',
      reason: 'Succeeded',
      message: 'completed',
      attempt: 1,
      exitCode: 0,
      outputs: { answer: '42' },
      startTime: '2026-06-01T10:59:00Z',
      completionTime: '2026-06-01T11:00:00Z',
    });
    expect(status.assignedPod).toBeUndefined();
    expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Succeeded' });
  });

  const artifacts: RunSpec['artifacts'] = { store: 's', outputs: [{ id: 'report.csv', maxBytes: 100, mediaType: 'text/csv' }] };
  const report = { id: 'report.csv', digest: `sha256:${'b'.repeat(64)}`, size: 10, mediaType: 'text/csv' };

  it.each<[string, Partial<RunSpec>, RunPhase]>([
    [
      'a failed run (non-zero exit)',
      { origin: localOrigin({ phase: 'Failed', reason: 'NonZeroExit', message: 'exited with code 3', exitCode: 3, outputs: {} }) },
      'Failed',
    ],
    [
      'a failed run (artifact missing, exit 0)',
      { artifacts, origin: localOrigin({ phase: 'Failed', reason: 'ArtifactMissing', message: 'x', exitCode: 0, outputs: {} }) },
      'Failed',
    ],
    ['a timed out run', { origin: localOrigin({ phase: 'Timeout', reason: 'Timeout', message: 'ran too long', outputs: {} }) }, 'Timeout'],
    ['a succeeded run with its declared artifacts', { artifacts, origin: localOrigin({ artifacts: [report] }) }, 'Succeeded'],
  ])('records %s', (_what, spec, phase) => {
    expect(expectOk(record(spec)).phase).toBe(phase);
  });

  it.each<[string, Partial<RunSpec>, TransitionRefusedError['refusal']]>([
    ['a Run without spec.origin', {}, 'precondition'],
    ['a function Run', { ...functionMode, origin: localOrigin() }, 'precondition'],
    ['a phase that is not a local result', { origin: localOrigin({ phase: 'Cancelled' as never }) }, 'precondition'],
    ['a reason of another phase', { origin: localOrigin({ reason: 'NonZeroExit' }) }, 'precondition'],
    ['a Succeeded result with a non-zero exit code', { origin: localOrigin({ exitCode: 1 }) }, 'precondition'],
    ['a fractional exit code', { origin: localOrigin({ phase: 'Failed', reason: 'NonZeroExit', exitCode: 1.5 }) }, 'precondition'],
    ['outputs over the bounds', { origin: localOrigin({ outputs: { 'bad key': 'x' } }) }, 'bounds'],
    ['artifacts the Run does not declare', { origin: localOrigin({ artifacts: [report] }) }, 'precondition'],
    ['a required artifact missing from a Succeeded result', { artifacts, origin: localOrigin() }, 'precondition'],
    [
      'artifacts on a Failed result',
      { artifacts, origin: localOrigin({ phase: 'Failed', reason: 'Failed', artifacts: [report] }) },
      'precondition',
    ],
    [
      'a completion before the start',
      { origin: localOrigin({ startTime: '2026-06-01T11:00:00Z', completionTime: '2026-06-01T10:00:00Z' }) },
      'precondition',
    ],
    ['a time that is not one', { origin: localOrigin({ startTime: 'yesterday' }) }, 'precondition'],
  ])('refuses %s', (_what, spec, refusal) => {
    expectRefused(record(spec), refusal);
  });

  it('a cancel stored before the record wins: Cancelled, the local result kept in the message and fields', () => {
    const status = expectOk(record({ origin: localOrigin(), cancelRequested: true }));
    expect(status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', exitCode: 0, outputs: { answer: '42' } });
    expect(status.message).toContain('the local run ended Succeeded');
  });

  it('is refused once recorded (a terminal phase never changes) and from any writer but the controller-manager', () => {
    const recorded = expectOk(record({ origin: localOrigin() }));
    const again = transition({
      run: { ...makeRun('Pending', { origin: localOrigin() }), status: recorded },
      event: { type: 'RecordOrigin' },
      writer: 'controller-manager',
      now: NOW,
    });
    expectRefused(again, 'wrongPhase');
    for (const writer of ['scheduler', 'runtimed', 'stale-recovery'] as const) {
      expectRefused(
        transition({ run: makeRun('Pending', { origin: localOrigin() }), event: { type: 'RecordOrigin' }, writer, now: NOW }),
        'wrongWriter',
      );
    }
  });
});
