import { RecoveryMetrics } from './metrics.ts';

describe('RecoveryMetrics', () => {
  it('renders the three series in the Prometheus text format', () => {
    const metrics = new RecoveryMetrics();
    metrics.recovery('podGone', 'requeued');
    metrics.recovery('podGone', 'requeued');
    metrics.recovery('leaseExpired', 'markedRecovering');
    metrics.fenceWait(0);
    metrics.fenceWait(7);
    metrics.statusWriteConflicts = 3;
    const text = metrics.render();
    expect(text).toContain('# TYPE kruntimes_recoveries_total counter');
    expect(text).toContain('kruntimes_recoveries_total{cause="podGone",outcome="requeued"} 2');
    expect(text).toContain('kruntimes_recoveries_total{cause="leaseExpired",outcome="markedRecovering"} 1');
    expect(text).toContain('# TYPE kruntimes_recovery_fence_wait_seconds histogram');
    expect(text).toContain('kruntimes_recovery_fence_wait_seconds_bucket{le="0.5"} 1');
    expect(text).toContain('kruntimes_recovery_fence_wait_seconds_bucket{le="10"} 2');
    expect(text).toContain('kruntimes_recovery_fence_wait_seconds_bucket{le="+Inf"} 2');
    expect(text).toContain('kruntimes_recovery_fence_wait_seconds_sum 7');
    expect(text).toContain('kruntimes_recovery_fence_wait_seconds_count 2');
    expect(text).toContain('kruntimes_recovery_status_write_conflicts_total 3');
    expect(text.endsWith('\n')).toBe(true);
    expect(metrics.recoveries('podGone', 'requeued')).toBe(2);
  });
});
