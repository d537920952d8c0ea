import type { FinishKind } from '@kruntimes/run-state';
import { exitCodeForFinish, progressLine, summaryLine } from './run.ts';

test.each<[FinishKind, number]>([
  ['succeeded', 0],
  ['failed', 1],
  ['timedOut', 5],
  ['cancelled', 5],
  ['interrupted', 5],
])('a Run that %s exits %i', (kind, code) => {
  expect(exitCodeForFinish(kind)).toBe(code);
});

test('progress lines: the time since creation, the phase, its Pod, a retry attempt, the reason', () => {
  expect(progressLine({ status: {} }, 'Pending', 0)).toBe('   +0.0s  Pending');
  expect(progressLine({ status: { assignedPod: 'py-1', attempt: 1 } }, 'Scheduled', 1234)).toBe('   +1.2s  Scheduled  (pod py-1)');
  expect(progressLine({ status: { assignedPod: 'py-2', attempt: 2, reason: 'Requeued' } }, 'Running', 65_000)).toBe(
    '  +65.0s  Running  (pod py-2, attempt 2, Requeued)',
  );
});

test('the summary: phase, reason, exit code, message, outputs', () => {
  expect(summaryLine('r', { status: { reason: 'Completed', exitCode: 0, outputs: { n: '1' } } }, 'Succeeded')).toBe(
    'run/r: Succeeded (Completed, exit code 0); outputs {"n":"1"}',
  );
  expect(summaryLine('r', { status: { reason: 'NonZeroExit', exitCode: 3, message: 'exited with 3' } }, 'Failed')).toBe(
    'run/r: Failed (NonZeroExit, exit code 3): exited with 3',
  );
  expect(summaryLine('r', {}, 'Cancelled')).toBe('run/r: Cancelled');
});
