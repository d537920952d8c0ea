import type { Run, Runtime } from '@kruntimes/api';
import { parse } from 'yaml';
import { age, formatArtifacts, formatRuns, formatRuntimes, pendingHint, waitingHint } from './output.ts';

const NOW = Date.parse('2026-12-02T12:00:00Z');

function run(name: string, overrides: Partial<Run> = {}): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, creationTimestamp: '2026-12-02T11:58:00Z' },
    spec: { runtime: 'py', source: { inline: 'x' }, mode: { function: { handler: 'h' } } },
    ...overrides,
  };
}

describe('age', () => {
  it.each([
    ['2026-12-02T11:59:15Z', '45s'],
    ['2026-12-02T11:50:00Z', '10m'],
    ['2026-12-02T09:00:00Z', '3h'],
    ['2026-11-27T12:00:00Z', '5d'],
    [undefined, '<unknown>'],
    ['garbage', '<unknown>'],
  ])('%s -> %s', (created, expected) => {
    expect(age(created, NOW)).toBe(expected);
  });
});

describe('formatRuns', () => {
  const ready = run('fn', {
    status: {
      phase: 'Ready',
      attempt: 1,
      assignedPod: 'pod-a',
      reason: 'FunctionRegistered',
      endpoint: { protocol: 'HTTPS', url: 'https://gw/x' },
      source: { digest: `sha256:0123456789ab${'f'.repeat(52)}`, size: 10 },
    },
  });
  const pending = run('task-1', {
    spec: { runtime: 'sh', source: { inline: 'x' }, mode: { task: {} }, parentRunRef: { name: 'task-0', uid: 'u' } },
  });

  it('prints a table: phase Pending when there is no status yet', () => {
    expect(formatRuns([ready, pending], 'table', NOW)).toBe(
      [
        'NAME     PHASE     REASON               MODE       RUNTIME   ATTEMPT   AGE',
        'fn       Ready     FunctionRegistered   function   py        1         2m',
        'task-1   Pending   -                    task       sh        -         2m',
        '',
      ].join('\n'),
    );
  });

  it('prints wide columns', () => {
    const lines = formatRuns([ready, pending], 'wide', NOW).split('\n');
    expect(lines[0]).toMatch(/POD\s+PARENT\s+SOURCE\s+ENDPOINT$/);
    expect(lines[1]).toMatch(/pod-a\s+-\s+sha256:0123456789ab\s+https:\/\/gw\/x$/);
    expect(lines[2]).toMatch(/\s-\s+task-0\s+-\s+-$/);
  });

  it('prints one Run as the object and several as a List, in JSON and YAML', () => {
    expect(JSON.parse(formatRuns([ready], 'json', NOW))).toEqual(ready);
    expect(JSON.parse(formatRuns([ready, pending], 'json', NOW))).toEqual({ apiVersion: 'v1', kind: 'List', items: [ready, pending] });
    expect(parse(formatRuns([ready], 'yaml', NOW))).toEqual(ready);
  });
});

describe('formatRuntimes', () => {
  it('prints ready/desired Pods, used/total slots, Pending Runs and the Scaling reason', () => {
    const elastic: Runtime = {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Runtime',
      metadata: { name: 'python', creationTimestamp: '2026-12-02T11:00:00Z' },
      spec: { language: 'python', replicas: 4, runs: 4, scaling: { maxReplicas: 8 } },
      status: {
        readyPods: 2,
        usedCapacity: 8,
        totalCapacity: 8,
        pendingRuns: 12,
        conditions: [
          { type: 'Scaling', status: 'True', reason: 'ScaledUp', message: '12 Runs waiting', lastTransitionTime: '2026-12-02T11:59:00Z' },
        ],
      },
    };
    const fixed: Runtime = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Runtime', metadata: { name: 'sh' }, spec: { language: 'bash' } };
    expect(formatRuntimes([elastic, fixed], NOW)).toBe(
      [
        'RUNTIME   LANGUAGE   PODS   SLOTS   PENDING   SCALING    AGE',
        'python    python     2/4    8/8     12        ScaledUp   60m',
        'sh        bash       0/1    0/0     0         -          <unknown>',
        '',
      ].join('\n'),
    );
  });
});

describe('formatArtifacts', () => {
  test('one row per artifact: ID, SIZE, MEDIA TYPE, DIGEST, aligned', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(
      formatArtifacts([
        { id: 'report.csv', size: 1234, mediaType: 'text/csv', digest },
        { id: 'model.bin', size: 7, mediaType: 'application/octet-stream', digest },
      ]),
    ).toBe(
      [
        'ID           SIZE   MEDIA TYPE                 DIGEST',
        `report.csv   1234   text/csv                   ${digest}`,
        `model.bin    7      application/octet-stream   ${digest}`,
        '',
      ].join('\n'),
    );
  });
});

describe('waitingHint', () => {
  it('tells how to see the schema and respond, for a waiting Run only', () => {
    const waiting = run('report', {
      status: {
        phase: 'WaitingInput',
        attempt: 1,
        waitingInput: {
          schema: 'true',
          checkpoint: { attempt: 1, digest: `sha256:${'a'.repeat(64)}`, size: 1 },
          since: '2026-12-02T11:59:00Z',
        },
      },
    });
    const hint = waitingHint(waiting) ?? '';
    expect(hint).toContain('run/report waits for input since 2026-12-02T11:59:00Z');
    expect(hint).toContain('krt wait report --for input');
    expect(hint).toContain('krt respond report --id ID --data JSON');
    expect(waitingHint(run('other', { status: { phase: 'Running' } }))).toBeUndefined();
  });
});

describe('pendingHint', () => {
  const message = 'waiting for a slot: Runtime py has 3 of 8 Pods ready, 12 of 12 slots used; scaling up';
  it.each<[string, Run['status'], string | undefined]>([
    [
      'waiting for capacity',
      { phase: 'Pending', reason: 'WaitingForCapacity', message },
      `run/r is Pending: WaitingForCapacity: ${message}\n`,
    ],
    [
      'no Pod has room',
      { phase: 'Pending', reason: 'NoCapacity', message: 'all 2 ready Pods are full' },
      'run/r is Pending: NoCapacity: all 2 ready Pods are full\n',
    ],
    ['a message without a reason', { phase: 'Pending', message: 'why' }, 'run/r is Pending: why\n'],
    ['Pending without a message', { phase: 'Pending', reason: 'AwaitingSchedule' }, undefined],
    ['a phase other than Pending', { phase: 'Running', reason: 'Running', message: 'busy' }, undefined],
  ])('%s', (_name, status, hint) => {
    expect(pendingHint(run('r', status === undefined ? {} : { status }))).toBe(hint);
  });
});
