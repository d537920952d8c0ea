import { DevError } from './dev-components.ts';
import { componentHealth, failureDetail, failureReason, partFailedLine } from './dev-parts.ts';

test.each([
  ['a DevError: its message', new DevError('its OTLP port 127.0.0.1:4318 is taken'), 'its OTLP port 127.0.0.1:4318 is taken'],
  [
    'a multi-line message: one line',
    new Error('weed exited\n  listen tcp: address already in use\n'),
    'weed exited listen tcp: address already in use',
  ],
  [
    'an aggregate: each message',
    new AggregateError([new Error('start failed'), new Error('stop failed')], 'both'),
    'start failed; stop failed',
  ],
  ['not an Error', 'a string', 'a string'],
  ['a long message: cut', new Error('x'.repeat(600)), `${'x'.repeat(500)}…`],
])('the reason of %s', (_name, error, reason) => {
  expect(failureReason(error)).toBe(reason);
});

/** Like the harness's ControlPlaneError: the log tail in the message and on its own. */
function harnessError(message: string, logTail: string): Error {
  return Object.assign(new Error(`${message}\n--- last log lines ---\n${logTail}`), { logTail });
}

test('of an error that carries a log tail, the reason holds its last line and the detail all of it', () => {
  const error = harnessError(
    'weed exited before it was ready',
    'I1207 starting\nF1207 listen tcp 127.0.0.1:8333: bind: address already in use\n',
  );
  expect(failureReason(error)).toBe(
    'weed exited before it was ready; its log ends: F1207 listen tcp 127.0.0.1:8333: bind: address already in use',
  );
  const detail = failureDetail(error);
  expect(detail).toContain('I1207 starting');
  expect(detail).toContain('    at '); // the stack
  expect(failureDetail('plain')).toBe('plain');
});

test('a failed part is one line with its cause and log', () => {
  const line = partFailedLine('jaeger', { reason: 'jaeger exited (exit code 1)', log: '/d/logs/jaeger.log' });
  expect(line).toBe(
    'jaeger FAILED (Jaeger and the traces; the demo and the rest keep running): jaeger exited (exit code 1); log /d/logs/jaeger.log',
  );
  expect(line).not.toContain('\n');
});

test.each([
  [true, undefined, 'running'],
  [false, undefined, 'EXITED'],
  [true, { reason: 'no trace', log: 'l' }, 'FAILED: no trace'],
  [false, { reason: 'exited', log: 'l' }, 'FAILED: exited'],
])('a component alive %s with failure %j is %s', (alive, failure, health) => {
  expect(componentHealth(alive, failure)).toBe(health);
});
