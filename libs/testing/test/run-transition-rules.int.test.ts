// Every CEL transition rule of the Run CRD ("Who writes what" in docs/lifecycle.md), checked against the real
// API server: each forbidden update is rejected and its allowed neighbour is accepted.
import type { Run, RunSpec, RunStatus } from '@kruntimes/api';
import { BOUNDS } from '@kruntimes/api';
import { Cluster } from '../src/cluster.ts';
import type { TestNamespace } from '../src/cluster.ts';
import { rejection, RunClient, taskSpec } from './support/runs.ts';

const cluster = Cluster.fromEnvironment();
let namespace: TestNamespace;
let runs: RunClient;

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'cel' });
  runs = new RunClient(cluster.kubeConfig(), namespace.name);
});
afterEach(async () => {
  await namespace.delete();
});

/** Applies `change` to the spec of the live Run `name` and PUTs it. */
async function changeSpecOf(name: string, change: (spec: RunSpec) => void): Promise<Run> {
  const updated = structuredClone(await runs.get(name));
  change(updated.spec);
  return runs.replace(updated);
}

/** Creates a Run, applies `change` to its spec and PUTs it. */
async function changeSpec(change: (spec: RunSpec) => void, initial: Partial<RunSpec> = {}): Promise<Run> {
  const run = await runs.create('r', taskSpec(initial));
  const updated = structuredClone(run);
  change(updated.spec);
  return runs.replace(updated);
}

describe('spec is immutable after create', () => {
  const forbidden: [field: string, change: (spec: RunSpec) => void, message: string][] = [
    [
      'runtime',
      (s) => {
        s.runtime = 'bash';
      },
      'spec.runtime is immutable',
    ],
    [
      'source',
      (s) => {
        s.source = { inline: 'print("other")' };
      },
      'spec.source is immutable',
    ],
    [
      'source kind',
      (s) => {
        s.source = { configMapKeyRef: { name: 'code', key: 'main.py' } };
      },
      'spec.source is immutable',
    ],
    [
      'mode',
      (s) => {
        s.mode = { function: { handler: 'main:handle' } };
      },
      'spec.mode is immutable',
    ],
    [
      'mode task args',
      (s) => {
        s.mode = { task: { args: ['b'] } };
      },
      'spec.mode is immutable',
    ],
    [
      'env value',
      (s) => {
        s.env = [{ name: 'GREETING', value: 'bye' }];
      },
      'spec.env is immutable',
    ],
    [
      'env removed',
      (s) => {
        delete s.env;
      },
      'spec.env is immutable',
    ],
    [
      'timeout',
      (s) => {
        s.timeout = '91s';
      },
      'spec.timeout is immutable',
    ],
    [
      'timeout removed',
      (s) => {
        delete s.timeout;
      },
      'spec.timeout is immutable',
    ],
    [
      'retryPolicy',
      (s) => {
        s.retryPolicy = { maxAttempts: 1, retrySafe: false, initialBackoffSeconds: 1 };
      },
      'spec.retryPolicy is immutable',
    ],
    [
      'retryPolicy.retrySafe',
      (s) => {
        s.retryPolicy = { maxAttempts: 1, retrySafe: true };
      },
      'spec.retryPolicy is immutable',
    ],
    [
      'parentRunRef added',
      (s) => {
        s.parentRunRef = { name: 'p', uid: '00000000-0000-0000-0000-000000000001' };
      },
      'spec.parentRunRef is immutable',
    ],
  ];

  test.each(forbidden)('changing %s is rejected', async (_field, change, message) => {
    const status = await rejection(changeSpec(change));
    expect(status.code).toBe(422);
    expect(status.message).toContain(message);
  });

  test('setting a field that was absent at create is rejected too (env, timeout, retryPolicy)', async () => {
    const run = await runs.create('r', { runtime: 'python', source: { inline: 'x' }, mode: { task: {} } });
    for (const change of [{ env: [{ name: 'A', value: 'b' }] }, { timeout: '10s' }, { retryPolicy: { maxAttempts: 1 } }]) {
      const status = await rejection(runs.replace({ ...run, spec: { ...run.spec, ...change } }));
      expect(status.code).toBe(422);
    }
  });

  test('changing ttlSecondsAfterFinished is accepted', async () => {
    const updated = await changeSpec(
      (s) => {
        s.ttlSecondsAfterFinished = 60;
      },
      { ttlSecondsAfterFinished: 3600 },
    );
    expect(updated.spec.ttlSecondsAfterFinished).toBe(60);
    const removed = await runs.replace({ ...updated, spec: { ...updated.spec, ttlSecondsAfterFinished: 5 } });
    expect(removed.spec.ttlSecondsAfterFinished).toBe(5);
  });

  test('an update that leaves spec as it was is accepted (labels change)', async () => {
    const run = await runs.create('r', taskSpec());
    const updated = await runs.replace({ ...run, metadata: { ...run.metadata, labels: { team: 'a' } } });
    expect(updated.metadata.labels).toEqual({ team: 'a' });
    expect(updated.spec).toEqual(run.spec);
  });
});

describe('spec.retryPolicy: a task that is not retrySafe runs once', () => {
  const refusal = 'spec.retryPolicy.maxAttempts > 1 needs retryPolicy.retrySafe: true';

  test.each([
    ['retrySafe false', { maxAttempts: 2, retrySafe: false }],
    ['retrySafe absent (defaulted to false)', { maxAttempts: 3 }],
  ])('maxAttempts > 1 on a task with %s is rejected', async (_name, retryPolicy) => {
    const status = await rejection(runs.create('r', taskSpec({ retryPolicy })));
    expect(status.code).toBe(422);
    expect(status.message).toContain(refusal);
  });

  test.each([
    ['a task with maxAttempts 1', taskSpec({ retryPolicy: { maxAttempts: 1 } })],
    ['a retrySafe task with maxAttempts 3', taskSpec({ retryPolicy: { maxAttempts: 3, retrySafe: true } })],
    [
      'a function with maxAttempts 3 (registration is always retry-safe)',
      taskSpec({ mode: { function: { handler: 'main' } }, retryPolicy: { maxAttempts: 3 } }),
    ],
  ])('%s is accepted', async (_name, spec) => {
    const run = await runs.create('r', spec);
    expect(run.spec.retryPolicy?.maxAttempts).toBe(spec.retryPolicy?.maxAttempts);
  });

  test('a retryPolicy without maxAttempts stores none (the default depends on retrySafe and the mode)', async () => {
    const run = await runs.create('r', taskSpec({ retryPolicy: { initialBackoffSeconds: 1 } }));
    expect(run.spec.retryPolicy).toEqual({ initialBackoffSeconds: 1, maxBackoffSeconds: 300, retrySafe: false });
  });
});

describe('spec.cancelRequested may only go from false to true', () => {
  test('false -> true is accepted', async () => {
    const run = await changeSpec(
      (s) => {
        s.cancelRequested = true;
      },
      { cancelRequested: false },
    );
    expect(run.spec.cancelRequested).toBe(true);
  });

  test('absent (defaulted to false) -> true is accepted', async () => {
    const run = await changeSpec((s) => {
      s.cancelRequested = true;
    });
    expect(run.spec.cancelRequested).toBe(true);
  });

  test('true -> false is rejected', async () => {
    const status = await rejection(
      changeSpec(
        (s) => {
          s.cancelRequested = false;
        },
        { cancelRequested: true },
      ),
    );
    expect(status.code).toBe(422);
    expect(status.message).toContain('spec.cancelRequested may only change from false to true');
  });

  test('true -> true is accepted', async () => {
    const run = await changeSpec(
      (s) => {
        s.ttlSecondsAfterFinished = 1;
      },
      { cancelRequested: true },
    );
    expect(run.spec.cancelRequested).toBe(true);
  });
});

describe('status rules', () => {
  async function withStatus(status: RunStatus): Promise<Run> {
    await runs.create('r', taskSpec());
    return runs.updateStatus('r', status);
  }

  test('assignedPod without assignedPodUID is rejected, and the reverse', async () => {
    await runs.create('r', taskSpec());
    for (const status of [{ assignedPod: 'pod-a' }, { assignedPodUID: 'uid-a' }]) {
      const rejected = await rejection(runs.updateStatus('r', { phase: 'Scheduled', attempt: 1, ...status }));
      expect(rejected.code).toBe(422);
      expect(rejected.message).toContain('status.assignedPod and status.assignedPodUID are set and cleared together');
    }
  });

  test('assignedPod and assignedPodUID set together and cleared together are accepted', async () => {
    const assigned = await withStatus({ phase: 'Scheduled', attempt: 1, assignedPod: 'pod-a', assignedPodUID: 'uid-a' });
    expect(assigned.status?.assignedPodUID).toBe('uid-a');
    const cleared = await runs.updateStatus('r', { phase: 'Pending', attempt: 2 });
    expect(cleared.status?.assignedPod).toBeUndefined();
  });

  test('status.attempt decreasing is rejected; staying or increasing is accepted', async () => {
    await withStatus({ phase: 'Pending', attempt: 2 });
    const rejected = await rejection(runs.updateStatus('r', { phase: 'Pending', attempt: 1 }));
    expect(rejected.code).toBe(422);
    expect(rejected.message).toContain('status.attempt may not decrease');
    const removed = await rejection(runs.updateStatus('r', { phase: 'Pending' }));
    expect(removed.message).toContain('status.attempt may not decrease');
    expect((await runs.updateStatus('r', { phase: 'Scheduled', attempt: 2 })).status?.attempt).toBe(2);
    expect((await runs.updateStatus('r', { phase: 'Pending', attempt: 3 })).status?.attempt).toBe(3);
  });

  test('status.reportSequence may not decrease or vanish within an attempt (an older report is refused); a new attempt clears it', async () => {
    const running = { phase: 'Running', attempt: 1, assignedPod: 'pod-a', assignedPodUID: 'uid-a' } as const;
    await withStatus({ ...running, reportSequence: 5 });
    for (const older of [{ ...running, reportSequence: 4 }, running]) {
      const rejected = await rejection(runs.updateStatus('r', older));
      expect(rejected.code).toBe(422);
      expect(rejected.message).toContain('status.reportSequence may not decrease within an attempt');
    }
    expect((await runs.updateStatus('r', { ...running, reportSequence: 5 })).status?.reportSequence).toBe(5);
    expect((await runs.updateStatus('r', { ...running, reportSequence: 6 })).status?.reportSequence).toBe(6);
    const requeued = await runs.updateStatus('r', { phase: 'Pending', attempt: 2 });
    expect(requeued.status?.reportSequence).toBeUndefined();
  });

  const terminal = ['Succeeded', 'Failed', 'Timeout', 'Cancelled', 'Interrupted'] as const;

  test.each(terminal)('a terminal phase (%s) never changes', async (phase) => {
    await withStatus({ phase: 'Running', attempt: 1 });
    await runs.updateStatus('r', { phase, attempt: 1 });
    for (const next of ['Running', 'Pending', phase === 'Succeeded' ? 'Failed' : 'Succeeded'] as const) {
      const rejected = await rejection(runs.updateStatus('r', { phase: next, attempt: 1 }));
      expect(rejected.code).toBe(422);
      expect(rejected.message).toContain('a terminal phase never changes');
    }
    // Its neighbour: other status fields of a finished Run may still be written.
    const updated = await runs.updateStatus('r', { phase, attempt: 1, message: 'done', reason: 'Finished' });
    expect(updated.status?.message).toBe('done');
  });

  test('Succeeded is rejected once cancel was requested; Cancelled is accepted', async () => {
    await runs.create('r', taskSpec({ cancelRequested: true }));
    await runs.updateStatus('r', { phase: 'Running', attempt: 1 });
    const rejected = await rejection(runs.updateStatus('r', { phase: 'Succeeded', attempt: 1, exitCode: 0 }));
    expect(rejected.code).toBe(422);
    expect(rejected.message).toContain('a Run whose cancel was requested cannot become Succeeded: it ends Cancelled');
    expect((await runs.updateStatus('r', { phase: 'Cancelled', attempt: 1, exitCode: 0 })).status?.phase).toBe('Cancelled');
  });

  test('a Run that succeeded before its cancel was requested stays Succeeded and may still be written', async () => {
    await withStatus({ phase: 'Succeeded', attempt: 1 });
    await changeSpecOf('r', (s) => {
      s.cancelRequested = true;
    });
    expect((await runs.updateStatus('r', { phase: 'Succeeded', attempt: 1, message: 'done' })).status?.message).toBe('done');
  });

  test('active phases may change (Running -> Ready -> Pending with a new attempt)', async () => {
    await withStatus({ phase: 'Running', attempt: 1 });
    expect((await runs.updateStatus('r', { phase: 'Ready', attempt: 1 })).status?.phase).toBe('Ready');
    expect((await runs.updateStatus('r', { phase: 'Pending', attempt: 2 })).status?.phase).toBe('Pending');
  });

  test(`an endpoint URL over ${BOUNDS.endpointUrlBytes} bytes is rejected; exactly ${BOUNDS.endpointUrlBytes} is accepted`, async () => {
    const url = (bytes: number): string => {
      const prefix = 'https://127.0.0.1:8443/';
      return prefix + 'a'.repeat(bytes - prefix.length);
    };
    await runs.create('r', taskSpec());
    const rejected = await rejection(
      runs.updateStatus('r', { phase: 'Ready', attempt: 1, endpoint: { protocol: 'HTTPS', url: url(BOUNDS.endpointUrlBytes + 1) } }),
    );
    expect(rejected.code).toBe(422);
    expect(rejected.message).toContain('status.endpoint.url');
    const accepted = await runs.updateStatus('r', {
      phase: 'Ready',
      attempt: 1,
      endpoint: { protocol: 'HTTPS', url: url(BOUNDS.endpointUrlBytes) },
    });
    expect(Buffer.byteLength(accepted.status?.endpoint?.url ?? '')).toBe(BOUNDS.endpointUrlBytes);
  });
});
