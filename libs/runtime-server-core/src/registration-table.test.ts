import { isKruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { RegistrationTable, sameConfig } from './registration-table.ts';
import type { FunctionConfig } from './registration-table.ts';

const RUN = '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6';
const OTHER_RUN = '7d1e6a55-0c9e-4a3e-9c57-1d1f0e0b2a11';
const config: FunctionConfig = { workdir: '/w/a', handler: 'main:handler', env: { A: '1' } };

function fixture() {
  let now = 1_000;
  let ids = 0;
  const table = new RegistrationTable({ clock: () => now, newId: () => `reg-${++ids}`, releasedCapacity: 2 });
  return {
    table,
    advance: (ms: number) => {
      now += ms;
      return now;
    },
    now: () => now,
  };
}

function codeOf(fn: () => unknown): ErrorCode | 'none' {
  try {
    fn();
    return 'none';
  } catch (error) {
    if (isKruntimesError(error)) return error.code;
    throw error;
  }
}

describe('sameConfig', () => {
  it.each<[string, FunctionConfig, boolean]>([
    ['identical', { ...config, env: { A: '1' } }, true],
    ['other workdir', { ...config, workdir: '/w/b' }, false],
    ['other handler', { ...config, handler: 'main:other' }, false],
    ['other env value', { ...config, env: { A: '2' } }, false],
    ['extra env key', { ...config, env: { A: '1', B: '' } }, false],
    ['missing env key', { ...config, env: {} }, false],
    ['same keys other order', { workdir: '/w/a', handler: 'main:handler', env: { A: '1' } }, true],
  ])('%s -> %s', (_name, other, expected) => {
    expect(sameConfig(config, other)).toBe(expected);
  });
});

describe('RegistrationTable.register', () => {
  // Each row: registrations before, then the one under test, and what it must do.
  it.each<{
    name: string;
    before: { runUid?: string; attempt: number; config?: FunctionConfig; unregister?: boolean }[];
    attempt: number;
    config?: FunctionConfig;
    expect: 'created' | 'existing' | ErrorCode;
    supersedes?: string;
  }>([
    { name: 'first registration', before: [], attempt: 1, expect: 'created' },
    { name: 'same attempt, same config: same ID', before: [{ attempt: 1 }], attempt: 1, expect: 'existing' },
    {
      name: 'same attempt, other config: conflict',
      before: [{ attempt: 1 }],
      attempt: 1,
      config: { ...config, handler: 'main:other' },
      expect: 'RegistrationConflict',
    },
    { name: 'higher attempt: new generation', before: [{ attempt: 1 }], attempt: 2, expect: 'created', supersedes: 'reg-1' },
    {
      name: 'higher attempt with another config is a new generation too',
      before: [{ attempt: 1 }],
      attempt: 3,
      config: { ...config, workdir: '/w/new' },
      expect: 'created',
      supersedes: 'reg-1',
    },
    { name: 'lower attempt: stale', before: [{ attempt: 2 }], attempt: 1, expect: 'StaleAttempt' },
    { name: 'released attempt may not come back', before: [{ attempt: 2, unregister: true }], attempt: 2, expect: 'StaleAttempt' },
    { name: 'below a released attempt: stale', before: [{ attempt: 2, unregister: true }], attempt: 1, expect: 'StaleAttempt' },
    { name: 'above a released attempt: created', before: [{ attempt: 2, unregister: true }], attempt: 3, expect: 'created' },
    { name: 'other Run UIDs are independent', before: [{ runUid: OTHER_RUN, attempt: 5 }], attempt: 1, expect: 'created' },
  ])('$name', ({ before, attempt, config: cfg, expect: expected, supersedes }) => {
    const { table } = fixture();
    for (const b of before) {
      const outcome = table.register({ runUid: b.runUid ?? RUN, attempt: b.attempt }, b.config ?? config);
      if (b.unregister === true) table.unregister(outcome.registration.id);
    }
    let outcome: ReturnType<RegistrationTable['register']> | undefined;
    const code = codeOf(() => {
      outcome = table.register({ runUid: RUN, attempt }, cfg ?? config);
    });
    if (expected === 'created' || expected === 'existing') {
      expect(code).toBe('none');
      expect(outcome?.kind).toBe(expected);
      if (expected === 'existing') expect(outcome?.registration.id).toBe('reg-1');
      if (outcome?.kind === 'created') expect(outcome.superseded?.id).toBe(supersedes);
    } else {
      expect(code).toBe(expected);
    }
  });

  it('invalidates the superseded ID for every operation', () => {
    const { table } = fixture();
    const old = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    table.markReady(old);
    const next = table.register({ runUid: RUN, attempt: 2 }, config).registration.id;
    expect(next).not.toBe(old);
    expect(codeOf(() => table.get(old))).toBe('RegistrationNotFound');
    expect(codeOf(() => table.beginInvocation(old, 'i'))).toBe('RegistrationNotFound');
    expect(
      codeOf(() => {
        table.markReady(old);
      }),
    ).toBe('RegistrationNotFound');
    expect(table.unregister(old)).toBeUndefined();
    expect(table.get(next).state).toBe('starting');
    expect(table.size).toBe(1);
  });

  it('forgets the oldest released Run UIDs beyond its capacity', () => {
    const { table } = fixture();
    const runs = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003'];
    for (const runUid of runs) table.unregister(table.register({ runUid, attempt: 1 }, config).registration.id);
    expect(codeOf(() => table.register({ runUid: runs[2]!, attempt: 1 }, config))).toBe('StaleAttempt');
    expect(codeOf(() => table.register({ runUid: runs[0]!, attempt: 1 }, config))).toBe('none');
  });
});

describe('RegistrationTable lifecycle', () => {
  it('unregistering an unknown ID succeeds with undefined, twice', () => {
    const { table } = fixture();
    expect(table.unregister('nope')).toBeUndefined();
    const id = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    expect(table.unregister(id)?.id).toBe(id);
    expect(table.unregister(id)).toBeUndefined();
  });

  it('abandon removes a failed start without fencing its attempt', () => {
    const { table } = fixture();
    const id = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    expect(table.abandon(id)?.id).toBe(id);
    expect(table.abandon(id)).toBeUndefined();
    expect(table.register({ runUid: RUN, attempt: 1 }, config).kind).toBe('created');
  });

  it.each<{ state: 'starting' | 'ready' | 'failed'; expect: ErrorCode | 'none' }>([
    { state: 'starting', expect: 'RunNotReady' },
    { state: 'ready', expect: 'none' },
    { state: 'failed', expect: 'RegistrationLost' },
  ])('beginInvocation on a $state registration -> $expect', ({ state, expect: expected }) => {
    const { table } = fixture();
    const id = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    if (state !== 'starting') table.markReady(id);
    if (state === 'failed') table.markFailed(id, 'RegistrationLost', 'worker exited with code 9');
    expect(codeOf(() => table.beginInvocation(id, 'inv-1'))).toBe(expected);
  });

  it('allows one invocation in flight; the overlapping one is refused and changes nothing', () => {
    const { table, advance } = fixture();
    const id = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    table.markReady(id);
    const slot = table.beginInvocation(id, 'inv-1');
    const startedAt = table.get(id).lastActivity;
    advance(5);
    expect(codeOf(() => table.beginInvocation(id, 'inv-2'))).toBe('InvocationInFlight');
    expect(table.get(id)).toMatchObject({ inFlight: 'inv-1', invocations: 1, lastActivity: startedAt });
    table.endInvocation(slot);
    expect(codeOf(() => table.beginInvocation(id, 'inv-2'))).toBe('none');
  });

  it('keeps the exact last-activity clock: registration, start and end of each invocation', () => {
    const { table, advance } = fixture();
    const registeredAt = advance(0);
    const id = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    table.markReady(id);
    expect(table.get(id)).toMatchObject({ registeredAt, lastActivity: registeredAt, invocations: 0 });
    const start = advance(100);
    const slot = table.beginInvocation(id, 'inv-1');
    expect(table.get(id)).toMatchObject({ lastActivity: start, inFlight: 'inv-1' });
    advance(50);
    expect(table.get(id).lastActivity).toBe(start);
    const end = advance(250);
    table.endInvocation(slot);
    expect(table.get(id)).toMatchObject({ lastActivity: end, inFlight: undefined, invocations: 1 });
    advance(1_000);
    table.endInvocation(slot);
    expect(table.get(id).lastActivity).toBe(end);
  });

  it('starts a new clock with a new generation and ignores the old slot', () => {
    const { table, advance } = fixture();
    const old = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    table.markReady(old);
    const slot = table.beginInvocation(old, 'inv-1');
    const newAt = advance(10_000);
    const next = table.register({ runUid: RUN, attempt: 2 }, config).registration.id;
    table.markReady(next);
    advance(1);
    table.endInvocation(slot);
    expect(table.get(next)).toMatchObject({ registeredAt: newAt, lastActivity: newAt, inFlight: undefined, invocations: 0 });
  });

  it('reports a fatal error with its cause once, and restarts without a new generation', () => {
    const { table, advance } = fixture();
    const id = table.register({ runUid: RUN, attempt: 1 }, config).registration.id;
    table.markReady(id);
    table.noteRestart(id);
    const at = advance(7);
    table.markFailed(id, 'RegistrationLost', 'worker exited with code 9');
    advance(7);
    table.markFailed(id, 'Internal', 'second cause is ignored');
    table.markReady(id);
    expect(table.get(id)).toMatchObject({
      state: 'failed',
      restarts: 1,
      fatalError: { code: 'RegistrationLost', message: 'worker exited with code 9', at },
    });
    expect(table.register({ runUid: RUN, attempt: 1 }, config).kind).toBe('existing');
    expect(table.register({ runUid: RUN, attempt: 2 }, config).kind).toBe('created');
  });

  it('returns snapshots that later changes do not touch', () => {
    const { table } = fixture();
    const env = { A: '1' };
    const created = table.register({ runUid: RUN, attempt: 1 }, { ...config, env }).registration;
    env.A = 'changed';
    table.markReady(created.id);
    expect(created.state).toBe('starting');
    expect(table.get(created.id).config.env).toEqual({ A: '1' });
    expect(table.list().map((r) => r.id)).toEqual([created.id]);
  });
});
