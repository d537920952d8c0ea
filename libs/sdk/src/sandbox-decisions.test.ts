import type { Run, Runtime } from '@kruntimes/api';
import { InvocationError } from './errors.ts';
import { SandboxToolError, cancelFinished, decideRuntimeCheck, sandboxState, toolError } from './sandbox-decisions.ts';

const runtime = (runs?: number): Runtime => ({
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'Runtime',
  metadata: { name: 'rt' },
  spec: { language: 'python', ...(runs === undefined ? {} : { runs }) },
});

describe('decideRuntimeCheck', () => {
  it.each([
    ['runs 1', runtime(1), undefined, false, 'exclusive'],
    ['runs absent (the default 1)', runtime(), undefined, true, 'exclusive'],
    ['runs 2', runtime(2), undefined, false, 'warn'],
    ['runs 2, exclusive', runtime(2), undefined, true, 'refuse:RuntimeNotExclusive'],
    ['not found', undefined, undefined, false, 'refuse:RuntimeNotFound'],
    ['not found, exclusive', undefined, undefined, true, 'refuse:RuntimeNotFound'],
    ['unreadable', undefined, 'HTTP 403', false, 'warn'],
    ['unreadable, exclusive', undefined, 'HTTP 403', true, 'refuse:RuntimeUnreadable'],
  ] as const)('%s', (_what, rt, readError, exclusive, expected) => {
    const check = decideRuntimeCheck({ name: 'rt', runtime: rt, readError, exclusive });
    expect(check.kind === 'refuse' ? `refuse:${check.code}` : check.kind).toBe(expected);
    if (check.kind !== 'exclusive') expect(check.message).toContain('Runtime "rt"');
  });
});

const run = (status: Run['status'], metadata: Partial<Run['metadata']> = {}): Run => ({
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'Run',
  metadata: { name: 'sandbox-x', ...metadata },
  spec: { runtime: 'rt', source: { inline: '' }, mode: { function: { handler: 'h' } } },
  ...(status === undefined ? {} : { status }),
});
const readyCondition = (status: 'True' | 'False') => [
  { type: 'Ready', status, reason: 'r', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
];
const endpoint = { protocol: 'HTTPS' as const, url: 'https://gw/v1/namespaces/ns/runtimes/rt/functions/u:invoke' };

describe('sandboxState', () => {
  it.each([
    ['no status', run(undefined), 'waiting'],
    ['Pending', run({ phase: 'Pending' }), 'waiting'],
    ['Scheduled', run({ phase: 'Scheduled' }), 'waiting'],
    ['Ready, condition True, endpoint', run({ phase: 'Ready', conditions: readyCondition('True'), endpoint }), 'ready'],
    ['Ready, condition False', run({ phase: 'Ready', conditions: readyCondition('False'), endpoint }), 'waiting'],
    ['Ready, no endpoint yet', run({ phase: 'Ready', conditions: readyCondition('True') }), 'waiting'],
    ['an endpoint alone is not Ready', run({ phase: 'Scheduled', endpoint }), 'waiting'],
    ['Failed', run({ phase: 'Failed', reason: 'SourceMismatch', message: 'bad' }), 'ended'],
    ['Timeout', run({ phase: 'Timeout', reason: 'IdleTimeout' }), 'ended'],
    [
      'being deleted',
      run({ phase: 'Ready', conditions: readyCondition('True'), endpoint }, { deletionTimestamp: '2026-01-01T00:00:00Z' }),
      'ended',
    ],
  ] as const)('%s', (_what, r, expected) => {
    expect(sandboxState(r).kind).toBe(expected);
  });

  it('names the phase and reason of an ended Run', () => {
    expect(sandboxState(run({ phase: 'Failed', reason: 'SourceMismatch', message: 'bad' }))).toEqual({
      kind: 'ended',
      message: 'sandbox Run "sandbox-x" ended Failed (SourceMismatch: bad)',
    });
  });
});

describe('cancelFinished', () => {
  it.each([
    ['Ready', run({ phase: 'Ready' }), false],
    ['Cancelled with the cleanup finalizer', run({ phase: 'Cancelled' }, { finalizers: ['kruntimes.io/registration-cleanup'] }), false],
    ['Cancelled, cleaned up', run({ phase: 'Cancelled' }, { finalizers: [] }), true],
  ] as const)('%s', (_what, r, expected) => {
    expect(cancelFinished(r)).toBe(expected);
  });
});

describe('toolError', () => {
  const failed = (message: string) =>
    new InvocationError({ code: 'FunctionFailed', message, invocationId: 'inv-1', httpStatus: 500, source: 'function' });
  it.each([
    [
      'PathOutsideWorkspace',
      "Traceback (most recent call last):\n  ...\nkruntimes_sandbox.SandboxError: PathOutsideWorkspace: '../x' leaves the workspace",
    ],
    ['InvalidToolCall', "kruntimes_sandbox.SandboxError: InvalidToolCall: unknown tool 'rm'\n"],
    [
      'ExecTimeout',
      'Traceback\nkruntimes_sandbox.SandboxError: ExecTimeout: timed out after 1 s; the process group was killed\n--- stdout (0 bytes) ---\n',
    ],
  ] as const)('%s', (kind, message) => {
    const error = toolError(failed(message));
    expect(error).toBeInstanceOf(SandboxToolError);
    expect(error).toBeInstanceOf(InvocationError);
    expect(error).toMatchObject({ kind, code: 'FunctionFailed', source: 'function', invocationId: 'inv-1', httpStatus: 500, message });
  });

  it('leaves any other error as it is', () => {
    const other = failed('ValueError: the handler refuses');
    expect(toolError(other)).toBe(other);
    const notReady = new InvocationError({
      code: 'RunNotReady',
      message: 'kruntimes_sandbox.SandboxError: InvalidToolCall: x',
      invocationId: 'i',
    });
    expect(toolError(notReady)).toBe(notReady);
    const plain = new Error('x');
    expect(toolError(plain)).toBe(plain);
  });
});
