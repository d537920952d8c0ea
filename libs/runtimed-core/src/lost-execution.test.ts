import { runtimeServerV1 } from '@kruntimes/proto';
import { ExecutionLostError, lostExecutionReason, settleLostExecution, unknownExecutionMessage } from './lost-execution.ts';
import type { ExecutionLookup } from './lost-execution.ts';
import { RuntimeServerError } from './runtime-server.ts';

const { ExecutionState, ExitReason } = runtimeServerV1;
const RUN = '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6';

const EXITED: runtimeServerV1.ExecutionExited = {
  reason: ExitReason.EXIT_REASON_COMPLETED,
  exitCode: 3,
  signal: '',
  manifest: [],
  outputs: { a: '1' },
  outputsError: '',
  message: '',
  time: new Date(0),
};

type Answer = runtimeServerV1.ExecutionState | Error;

/** A Runtime Server answering from a script (the last answer repeats), on a fake clock. */
function fixture(...answers: Answer[]): ReturnType<typeof fixtureSeen> {
  return fixtureSeen(false, ...answers);
}

function fixtureSeen(startedSeen: boolean, ...answers: Answer[]) {
  let now = 0;
  const asked: { runUid: string; attempt: number; timeoutMs: number }[] = [];
  const server: ExecutionLookup = {
    execution(runUid, attempt, timeoutMs) {
      asked.push({ runUid, attempt, timeoutMs });
      const answer = answers.length > 1 ? answers.shift() : answers[0];
      if (answer instanceof Error) return Promise.reject(answer);
      return Promise.resolve({
        state: answer ?? ExecutionState.EXECUTION_STATE_UNKNOWN,
        executionId: `${RUN}/2`,
        started: undefined,
        exited: answer === ExecutionState.EXECUTION_STATE_EXITED ? EXITED : undefined,
      });
    },
  };
  const settle = () =>
    settleLostExecution(server, RUN, 2, {
      waitMs: 1_000,
      startedSeen,
      pollMs: 100,
      callTimeoutMs: 50,
      now: () => now,
      sleep: (ms) => {
        now += ms;
        return Promise.resolve();
      },
    });
  return { settle, asked, elapsed: () => now };
}

const unreachable = () =>
  new RuntimeServerError('OwnerUnavailable', 'Runtime Server unreachable or failed: connection refused', false, undefined);

async function lost(promise: Promise<unknown>): Promise<ExecutionLostError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExecutionLostError);
  return error as ExecutionLostError;
}

describe('settleLostExecution', () => {
  it('returns the ending the Runtime Server recorded, asking by Run UID and attempt', async () => {
    const { settle, asked } = fixture(ExecutionState.EXECUTION_STATE_EXITED);
    expect(await settle()).toEqual(EXITED);
    expect(asked).toEqual([{ runUid: RUN, attempt: 2, timeoutMs: 50 }]);
  });

  it('keeps asking while the execution still runs, and returns its ending', async () => {
    const { settle, asked, elapsed } = fixture(
      ExecutionState.EXECUTION_STATE_RUNNING,
      ExecutionState.EXECUTION_STATE_RUNNING,
      ExecutionState.EXECUTION_STATE_EXITED,
    );
    expect(await settle()).toEqual(EXITED);
    expect(asked).toHaveLength(3);
    expect(elapsed()).toBe(200);
  });

  it('rides out a Runtime Server that does not answer for a while', async () => {
    const { settle, asked } = fixture(unreachable(), unreachable(), ExecutionState.EXECUTION_STATE_EXITED);
    expect(await settle()).toEqual(EXITED);
    expect(asked).toHaveLength(3);
  });

  it('gives up at once when the Runtime Server has no record (it restarted)', async () => {
    const { settle, asked } = fixture(ExecutionState.EXECUTION_STATE_UNKNOWN);
    const error = await lost(settle());
    expect(error).toMatchObject({ stillRunning: false, message: expect.stringContaining('no record') as unknown });
    // Without its start seen, it may never have started: nothing says the Runtime Server died.
    expect(error.runtimeServerRestarted).toBe(false);
    expect(asked).toHaveLength(1);
  });

  it('says the Runtime Server restarted during the execution when the stream had delivered its start', async () => {
    const { settle, asked } = fixtureSeen(true, ExecutionState.EXECUTION_STATE_UNKNOWN);
    const error = await lost(settle());
    expect(error).toMatchObject({ stillRunning: false, message: unknownExecutionMessage(true), runtimeServerRestarted: true });
    expect(asked).toHaveLength(1);
  });

  it('gives up at the bound when the execution is still running, saying so', async () => {
    const { settle, elapsed } = fixture(ExecutionState.EXECUTION_STATE_RUNNING);
    const error = await lost(settle());
    expect(error.stillRunning).toBe(true);
    expect(error.message).toContain('still running');
    expect(elapsed()).toBe(1_000);
  });

  it('gives up at the bound when the Runtime Server never answers, with the cause', async () => {
    const cause = unreachable();
    const { settle, elapsed } = fixture(cause);
    const error = await lost(settle());
    expect(error).toMatchObject({ stillRunning: false, cause });
    expect(error.message).toContain('did not answer');
    expect(elapsed()).toBe(1_000);
  });

  it.each([
    ['an answered error', new RuntimeServerError('InvalidRequest', 'run_uid must be a Kubernetes UID', true, undefined)],
    ['an older Runtime Server without the RPC', new RuntimeServerError('Unimplemented', 'unimplemented', false, undefined)],
  ])('gives up at once on %s', async (_name, cause) => {
    const { settle, asked } = fixture(cause);
    expect(await lost(settle())).toMatchObject({ stillRunning: false, cause });
    expect(asked).toHaveLength(1);
  });
});

describe('unknownExecutionMessage', () => {
  it.each([
    [false, /has no record of the execution \(it restarted or never started it\)/],
    [true, /^the Runtime Server restarted during the execution \(killed or crashed\) and has no record of it/],
  ])('started seen %s: %p', (startedSeen, expected) => {
    expect(unknownExecutionMessage(startedSeen)).toMatch(expected);
  });
});

describe('lostExecutionReason', () => {
  it.each([
    ['the Runtime Server restarted during it', new ExecutionLostError('m', false, undefined, true), 'RuntimeServerLost'],
    ['no record, its start not seen', new ExecutionLostError('m', false, undefined), undefined],
    ['still running at the bound', new ExecutionLostError('m', true, undefined), undefined],
    ['any other failure', new Error('stream reset'), undefined],
    ['no failure at all', undefined, undefined],
  ])('%s: %p', (_name, failure, expected) => {
    expect(lostExecutionReason(failure)).toBe(expected);
  });
});
