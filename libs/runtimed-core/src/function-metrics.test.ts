import { FunctionMetrics } from './function-metrics.ts';
import type { HeldFunction } from './function-metrics.ts';
import { startPrometheusMetrics } from './otel-metrics.ts';

function series(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

const A = { namespace: 'ns', runtime: 'py', run: 'a' };
const B = { namespace: 'ns', runtime: 'py', run: 'b' };
const L = (run: string, extra = ''): string => `namespace="ns",runtime="py",run="${run}"${extra}`;

function fixture(): { metrics: FunctionMetrics; time: { now: number; clock: number }; held: HeldFunction[] } {
  const time = { now: 1_000_000, clock: 0 };
  const metrics = new FunctionMetrics({ now: () => time.now, clock: () => time.clock });
  const held: HeldFunction[] = [];
  metrics.observeHeld(() => held);
  return { metrics, time, held };
}

describe('FunctionMetrics', () => {
  it('counts invocations by code, their durations, and what is in flight', () => {
    const { metrics, time, held } = fixture();
    held.push({ ...A, readySinceMs: undefined });
    const first = metrics.invocationStarted(A);
    const second = metrics.invocationStarted(A);
    expect(series(metrics.render()).get(`kruntimes_function_inflight{${L('a')}}`)).toBe(2);
    time.clock += 30;
    first('OK');
    time.clock += 2_000;
    second('FunctionFailed');
    // A second call of the same end is ignored.
    second('OK');
    const values = series(metrics.render());
    expect(values.get(`kruntimes_function_invocations_total{${L('a', ',code="OK"')}}`)).toBe(1);
    expect(values.get(`kruntimes_function_invocations_total{${L('a', ',code="FunctionFailed"')}}`)).toBe(1);
    expect(values.get(`kruntimes_function_inflight{${L('a')}}`)).toBe(0);
    expect(values.get(`kruntimes_function_invocation_duration_seconds_bucket{${L('a', ',le="0.05"')}}`)).toBe(1);
    expect(values.get(`kruntimes_function_invocation_duration_seconds_bucket{${L('a', ',le="2.5"')}}`)).toBe(2);
    expect(values.get(`kruntimes_function_invocation_duration_seconds_bucket{${L('a', ',le="+Inf"')}}`)).toBe(2);
    expect(values.get(`kruntimes_function_invocation_duration_seconds_count{${L('a')}}`)).toBe(2);
    expect(values.get(`kruntimes_function_invocation_duration_seconds_sum{${L('a')}}`)).toBeCloseTo(2.06);
  });

  it('measures idle time from Ready, then from the end of the last invocation, and 0 while one is in flight', () => {
    const { metrics, time, held } = fixture();
    held.push({ ...A, readySinceMs: time.now - 5_000 });
    expect(series(metrics.render()).get(`kruntimes_function_idle_seconds{${L('a')}}`)).toBe(5);
    const end = metrics.invocationStarted(A);
    time.now += 1_000;
    expect(series(metrics.render()).get(`kruntimes_function_idle_seconds{${L('a')}}`)).toBe(0);
    end('OK');
    time.now += 7_500;
    expect(series(metrics.render()).get(`kruntimes_function_idle_seconds{${L('a')}}`)).toBe(7.5);
  });

  it('starts the idle clock when it first sees the Run if its Ready time is unknown', () => {
    const { metrics, time, held } = fixture();
    held.push({ ...B, readySinceMs: undefined });
    expect(series(metrics.render()).get(`kruntimes_function_idle_seconds{${L('b')}}`)).toBe(0);
    time.now += 3_000;
    expect(series(metrics.render()).get(`kruntimes_function_idle_seconds{${L('b')}}`)).toBe(3);
  });

  it("drops a Run's series once this runtimed no longer holds it, but not while an invocation is in flight", () => {
    const { metrics, held } = fixture();
    held.push({ ...A, readySinceMs: undefined }, { ...B, readySinceMs: undefined });
    metrics.invocationStarted(B)('OK');
    const inflight = metrics.invocationStarted(A);
    held.length = 0;
    let text = metrics.render();
    expect(text).not.toContain('run="b"');
    expect(series(text).get(`kruntimes_function_inflight{${L('a')}}`)).toBe(1);
    inflight('OK');
    text = metrics.render();
    expect(text).not.toContain('run="a"');
    // Every family is still declared.
    for (const name of [
      'kruntimes_function_invocations_total counter',
      'kruntimes_function_invocation_duration_seconds histogram',
      'kruntimes_function_inflight gauge',
      'kruntimes_function_idle_seconds gauge',
    ]) {
      expect(text).toContain(`# TYPE ${name}\n`);
    }
    // Back again (same name, e.g. a new Run): counters start from zero.
    held.push({ ...B, readySinceMs: undefined });
    expect(series(metrics.render()).has(`kruntimes_function_invocations_total{${L('b', ',code="OK"')}}`)).toBe(false);
  });
});

describe("runtimed's /metrics", () => {
  it('serves the per-function families beside the OpenTelemetry ones, and refuses an Authorization header', async () => {
    const prometheus = await startPrometheusMetrics('127.0.0.1', 0);
    try {
      prometheus.metrics.functions.observeHeld(() => [{ ...A, readySinceMs: undefined }]);
      prometheus.metrics.functions.invocationStarted(A)('OK');
      prometheus.metrics.registration('registered');
      const url = `http://127.0.0.1:${String(prometheus.port)}/metrics`;
      const text = await (await fetch(url)).text();
      expect(text).toContain('# TYPE kruntimes_runtimed_registrations_total counter');
      expect(text).toMatch(/^kruntimes_process_heap_used_bytes [1-9]\d*$/m);
      expect(text).toMatch(/^kruntimes_process_resident_bytes [1-9]\d*$/m);
      expect(text).toMatch(/^kruntimes_process_event_loop_delay_p99_seconds [\d.e-]+$/m);
      expect(series(text).get(`kruntimes_function_invocations_total{${L('a', ',code="OK"')}}`)).toBe(1);
      const refused = await fetch(url, { headers: { authorization: 'Bearer x' } });
      expect(refused.status).toBe(400);
      await refused.text();
    } finally {
      await prometheus.shutdown();
    }
  });
});
