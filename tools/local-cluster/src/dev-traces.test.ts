import { traceLine } from './dev-traces.ts';

test('a trace as a line: its spans and the services they came from', () => {
  expect(
    traceLine({
      traceID: 't1',
      spans: [{ processID: 'p1' }, { processID: 'p1' }, { processID: 'p2' }, { processID: 'p3' }, { processID: 'gone' }],
      processes: {
        p1: { serviceName: 'kruntimes-runtime-gateway' },
        p2: { serviceName: 'kruntimes-runtimed' },
        p3: { serviceName: 'kruntimes-runtime-server-python' },
      },
    }),
  ).toEqual({
    services: ['?', 'kruntimes-runtime-gateway', 'kruntimes-runtime-server-python', 'kruntimes-runtimed'],
    line: '5 spans across ?, kruntimes-runtime-gateway, kruntimes-runtime-server-python, kruntimes-runtimed (trace t1)',
  });
});
