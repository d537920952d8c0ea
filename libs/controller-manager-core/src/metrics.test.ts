import { RUN_PHASES } from '@kruntimes/api';
import { phaseMetricLabel } from '@kruntimes/run-state';
import { startMetricsEndpoint } from '@kruntimes/controller-runtime';
import { ManagerMetrics, renderManagerMetrics } from './metrics.ts';
import type { ManagerMetricsSnapshot } from './metrics.ts';

function series(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

const pod = (
  runtime: string,
  ready: boolean,
  extra: { deleting?: boolean; capacity?: number } = {},
): ManagerMetricsSnapshot['pods'][number] => ({
  namespace: 'ns',
  runtime,
  ready,
  deleting: extra.deleting ?? false,
  capacity: extra.capacity,
});

const SNAPSHOT: ManagerMetricsSnapshot = {
  runtimes: [
    { namespace: 'ns', name: 'py', runsPerPod: 4, desiredPods: 4, maxPods: 8 },
    { namespace: 'ns', name: 'empty', runsPerPod: undefined, desiredPods: 1, maxPods: 1 },
  ],
  runs: [
    { namespace: 'ns', runtime: 'py', phase: 'Pending', cleanupPending: false, deleting: false },
    { namespace: 'ns', runtime: 'py', phase: 'Pending', cleanupPending: false, deleting: false },
    { namespace: 'ns', runtime: 'py', phase: 'Ready', cleanupPending: false, deleting: false },
    { namespace: 'ns', runtime: 'py', phase: 'Running', cleanupPending: false, deleting: false },
    // Terminal: holds a unit only while its registration cleanup is pending.
    { namespace: 'ns', runtime: 'py', phase: 'Succeeded', cleanupPending: true, deleting: false },
    { namespace: 'ns', runtime: 'py', phase: 'Failed', cleanupPending: false, deleting: false },
    // Pending but being deleted: waits for nothing.
    { namespace: 'ns', runtime: 'py', phase: 'Pending', cleanupPending: false, deleting: true },
    { namespace: 'other', runtime: 'missing', phase: 'Pending', cleanupPending: false, deleting: false },
  ],
  pods: [pod('py', true), pod('py', true, { capacity: 2 }), pod('py', false), pod('py', true, { deleting: true }), pod('empty', false)],
};

describe('renderManagerMetrics', () => {
  const text = renderManagerMetrics(SNAPSHOT);
  const values = series(text);

  it('counts Runs per namespace, Runtime and phase, every phase zero-filled', () => {
    expect(values.get('kruntimes_runs{namespace="ns",runtime="py",phase="pending"}')).toBe(3);
    expect(values.get('kruntimes_runs{namespace="ns",runtime="py",phase="ready"}')).toBe(1);
    expect(values.get('kruntimes_runs{namespace="ns",runtime="py",phase="running"}')).toBe(1);
    expect(values.get('kruntimes_runs{namespace="other",runtime="missing",phase="pending"}')).toBe(1);
    for (const phase of RUN_PHASES)
      expect(values.has(`kruntimes_runs{namespace="ns",runtime="py",phase="${phaseMetricLabel(phase)}"}`)).toBe(true);
    const total = [...values].filter(([name]) => name.startsWith('kruntimes_runs{namespace="ns"')).reduce((sum, [, v]) => sum + v, 0);
    expect(total).toBe(7);
  });

  it('reports the pool: current, desired and maximum Pods and the Runs waiting for a slot', () => {
    // Non-deleting Pods, ready or not.
    expect(values.get('kruntimes_runtime_pods{namespace="ns",runtime="py"}')).toBe(3);
    expect(values.get('kruntimes_runtime_desired_pods{namespace="ns",runtime="py"}')).toBe(4);
    expect(values.get('kruntimes_runtime_max_pods{namespace="ns",runtime="py"}')).toBe(8);
    expect(values.get('kruntimes_runtime_pending_runs{namespace="ns",runtime="py"}')).toBe(2);
    expect(values.get('kruntimes_runtime_desired_pods{namespace="ns",runtime="empty"}')).toBe(1);
    // A fixed pool's maximum is its spec.replicas.
    expect(values.get('kruntimes_runtime_max_pods{namespace="ns",runtime="empty"}')).toBe(1);
  });

  it('reports capacity and ready Pods as the Runtime status computes them', () => {
    // Ready, non-deleting: one with runsPerPod (4), one with its own capacity (2).
    expect(values.get('kruntimes_runtime_capacity_total{namespace="ns",runtime="py"}')).toBe(6);
    expect(values.get('kruntimes_runtime_ready_pods{namespace="ns",runtime="py"}')).toBe(2);
    // Ready, Running, and the Succeeded one whose cleanup is pending.
    expect(values.get('kruntimes_runtime_capacity_used{namespace="ns",runtime="py"}')).toBe(3);
    expect(values.get('kruntimes_runtime_capacity_total{namespace="ns",runtime="empty"}')).toBe(0);
    expect(values.get('kruntimes_runtime_capacity_used{namespace="ns",runtime="empty"}')).toBe(0);
    // No capacity series for a Runtime that is not cached.
    expect(values.has('kruntimes_runtime_capacity_total{namespace="other",runtime="missing"}')).toBe(false);
  });

  it('declares every family, with no series when nothing is cached (a replica that does not lead)', () => {
    const empty = renderManagerMetrics(undefined);
    for (const name of [
      'kruntimes_runs',
      'kruntimes_runtime_capacity_total',
      'kruntimes_runtime_capacity_used',
      'kruntimes_runtime_ready_pods',
      'kruntimes_runtime_pods',
      'kruntimes_runtime_desired_pods',
      'kruntimes_runtime_max_pods',
      'kruntimes_runtime_pending_runs',
    ]) {
      expect(empty).toContain(`# TYPE ${name} gauge\n`);
      expect(text).toContain(`# TYPE ${name} gauge\n`);
    }
    expect(series(empty).size).toBe(0);
  });

  it('escapes label values', () => {
    const odd = renderManagerMetrics({
      runtimes: [{ namespace: 'n', name: 'a"b\\c', runsPerPod: 1, desiredPods: 1, maxPods: 1 }],
      runs: [],
      pods: [],
    });
    expect(odd).toContain('kruntimes_runtime_ready_pods{namespace="n",runtime="a\\"b\\\\c"} 0');
  });
});

describe('the metrics endpoint', () => {
  it('serves the manager metrics while it is observed', async () => {
    const metrics = new ManagerMetrics();
    const endpoint = await startMetricsEndpoint('127.0.0.1:0', () => metrics.render());
    try {
      const url = `http://127.0.0.1:${String(endpoint.address.port)}/metrics`;
      expect(series(await (await fetch(url)).text()).size).toBe(0);
      metrics.observe(() => SNAPSHOT);
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      expect(series(await response.text()).get('kruntimes_runtime_capacity_total{namespace="ns",runtime="py"}')).toBe(6);
      const refused = await fetch(url, { headers: { authorization: 'Bearer x' } });
      expect(refused.status).toBe(400);
      await refused.text();
      const other = await fetch(`http://127.0.0.1:${String(endpoint.address.port)}/other`);
      expect(other.status).toBe(404);
      await other.text();
      metrics.observe(undefined);
      expect(series(await (await fetch(url)).text()).size).toBe(0);
    } finally {
      await endpoint.close();
    }
  });
});
