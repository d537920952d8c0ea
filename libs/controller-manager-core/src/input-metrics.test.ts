import { InputMetrics } from './input-metrics.ts';

describe('InputMetrics', () => {
  it('exports both families before the first series', () => {
    const text = new InputMetrics().render();
    expect(text).toContain('# TYPE kruntimes_run_input_decisions_total counter');
    expect(text).toContain('# TYPE kruntimes_waiting_input_ended_total counter');
    expect(text).not.toMatch(/^kruntimes_/m);
  });

  it('counts decisions per namespace and reason, and endings per namespace and phase', () => {
    const metrics = new InputMetrics();
    metrics.decided('ns', 'Accepted');
    metrics.decided('ns', 'Accepted');
    metrics.decided('ns', 'InputInvalid');
    metrics.waitEnded('other', 'Timeout');
    const text = metrics.render();
    expect(text).toContain('kruntimes_run_input_decisions_total{namespace="ns",reason="Accepted"} 2\n');
    expect(text).toContain('kruntimes_run_input_decisions_total{namespace="ns",reason="InputInvalid"} 1\n');
    expect(text).toContain('kruntimes_waiting_input_ended_total{namespace="other",phase="Timeout"} 1\n');
  });
});
