import { parseWatchdogMessage } from './watchdog-protocol.ts';

test('parses the three messages', () => {
  expect(parseWatchdogMessage('{"kind":"watch-process-group","pgid":42}')).toEqual({ kind: 'watch-process-group', pgid: 42 });
  expect(parseWatchdogMessage('{"kind":"release-process-group","pgid":42}')).toEqual({ kind: 'release-process-group', pgid: 42 });
  expect(parseWatchdogMessage('{"kind":"watch-directory","path":"/tmp/x"}')).toEqual({ kind: 'watch-directory', path: '/tmp/x' });
});

test.each([
  '{"kind":"watch-process-group","pgid":0}', // kill(-0) would signal the watchdog's own group
  '{"kind":"watch-process-group","pgid":1}', // kill(-1) would signal every process it may
  '{"kind":"watch-process-group","pgid":"42"}',
  '{"kind":"watch-directory","path":"relative"}',
  '{"kind":"other"}',
])('refuses %s', (line) => {
  expect(() => parseWatchdogMessage(line)).toThrow(/invalid watchdog message/);
});
