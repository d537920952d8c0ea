import type { Meter } from '@opentelemetry/api';
import { startOtelMetricsEndpoint } from './otel-metrics-endpoint.ts';
import type { OtelMetricsEndpoint } from './otel-metrics-endpoint.ts';
import { PROMETHEUS_TEXT } from './plaintext-endpoint.ts';

const LOOPBACK = '127.0.0.1';

/** A counter, and a gauge whose callback throws while `failing` is set. */
function instruments(meter: Meter) {
  const failing = { now: false };
  const calls = meter.createCounter('kruntimes.test.calls', { description: 'Calls counted by the test' });
  meter.createObservableGauge('kruntimes.test.flaky', { description: 'A gauge that may fail' }).addCallback((result) => {
    if (failing.now) throw new Error('gauge callback failed');
    result.observe(1);
  });
  return { calls, failing };
}

let endpoint: OtelMetricsEndpoint<ReturnType<typeof instruments>> | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

async function scrape(headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`http://${LOOPBACK}:${String(endpoint?.address.port)}/metrics`, { headers });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

describe('startOtelMetricsEndpoint', () => {
  it('serves the instruments as Prometheus text, names without prefix or scope, the process gauges after them, then the trailer', async () => {
    endpoint = await startOtelMetricsEndpoint({
      listen: { host: LOOPBACK, port: 0 },
      scope: 'kruntimes.test',
      instruments,
      trailer: () => '# trailer\n',
      collectionErrors: 'fail',
    });
    endpoint.instruments.calls.add(2, { kind: 'a' });
    const { status, type, text } = await scrape();
    expect({ status, type }).toEqual({ status: 200, type: PROMETHEUS_TEXT });
    expect(text).toContain('# HELP kruntimes_test_calls_total Calls counted by the test\n');
    expect(text).toContain('kruntimes_test_calls_total{kind="a"} 2\n');
    expect(text).not.toContain('otel_scope_name');
    expect(text.indexOf('kruntimes_test_calls_total')).toBeLessThan(text.indexOf('kruntimes_process_heap_used_bytes'));
    expect(text.endsWith('# trailer\n')).toBe(true);
  });

  it.each([
    ['fail', 500],
    ['serve', 200],
  ] as const)('a collection error with collectionErrors %s answers %i', async (collectionErrors, expected) => {
    endpoint = await startOtelMetricsEndpoint({
      listen: { host: LOOPBACK, port: 0 },
      scope: 'kruntimes.test',
      instruments,
      collectionErrors,
    });
    endpoint.instruments.failing.now = true;
    const { status, text } = await scrape();
    expect(status).toBe(expected);
    if (expected === 200) expect(text).toContain('kruntimes_process_heap_used_bytes');
  });

  it('refuses a request carrying a credential', async () => {
    endpoint = await startOtelMetricsEndpoint({
      listen: { host: LOOPBACK, port: 0 },
      scope: 'kruntimes.test',
      instruments,
      collectionErrors: 'serve',
    });
    expect((await scrape({ authorization: 'Bearer x' })).status).toBe(400);
  });
});
