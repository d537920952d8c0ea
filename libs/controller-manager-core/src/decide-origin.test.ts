import type { Run, RunOrigin, RunStatus } from '@kruntimes/api';
import { decideOrigin } from './decide-origin.ts';
import { LOCAL_ORIGIN as origin, originRun } from './testing/origin-runs.ts';

function run(extra: { origin?: RunOrigin; status?: RunStatus; deleting?: boolean; function?: boolean } = {}): Run {
  const metadata = {
    name: 'r',
    namespace: 'ns',
    uid: 'u',
    ...(extra.deleting === true ? { deletionTimestamp: '2026-12-04T11:00:00Z' } : {}),
  };
  return originRun(metadata, extra);
}

const NOW = '2026-12-04T11:00:00Z';

describe('decideOrigin', () => {
  it.each<[string, Run, string]>([
    ['a Run without origin', run(), 'ignore'],
    ['a Run being deleted', run({ origin, deleting: true }), 'ignore'],
    ['a Run already recorded', run({ origin, status: { phase: 'Failed' } }), 'ignore'],
    ['a Pending Run with an origin', run({ origin }), 'record'],
    ['a Pending Run with an origin, status written by nobody yet', run({ origin, status: {} }), 'record'],
    ['a function Run with an origin (the CRD refuses it; the state machine too)', run({ origin, function: true }), 'refused'],
  ])('%s: %s', (_what, input, action) => {
    expect(decideOrigin(input, NOW).action).toBe(action);
  });

  it('records the origin’s phase, reason, exit code and times', () => {
    const decision = decideOrigin(run({ origin }), NOW);
    if (decision.action !== 'record') throw new Error(decision.action);
    expect(decision.status).toMatchObject({
      phase: 'Failed',
      reason: 'NonZeroExit',
      exitCode: 3,
      startTime: '2026-12-04T10:00:00Z',
      completionTime: '2026-12-04T10:00:01Z',
    });
  });
});
