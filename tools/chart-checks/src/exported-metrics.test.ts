import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { InputMetrics, renderManagerMetrics } from '@kruntimes/controller-manager-core';
import { LeaderElectionMetrics, ProcessMetrics } from '@kruntimes/controller-runtime';
import { startMetricsServer } from '@kruntimes/gateway-core';
import { startPrometheusMetrics } from '@kruntimes/runtimed-core';
import { SchedulerMetrics } from '@kruntimes/scheduler-core';
import { ScheduleMetrics } from '@kruntimes/schedule-core';
import { RecoveryMetrics } from '@kruntimes/stale-recovery-core';
import { LOOPBACK, freePorts } from '@kruntimes/testing';
import { EXPORTED_METRICS_FILE, familiesOfExposition, readExportedMetrics } from './exported-metrics.ts';
import { WORKSPACE_ROOT } from './workspace.ts';

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
}

/**
 * The /metrics text of each service, from its real exporter (the same code its main.ts
 * serves), after one observation of every metric: an OpenTelemetry instrument appears in
 * the exposition only once it has a data point.
 */
async function expositions(): Promise<Record<string, string>> {
  const scheduler = new SchedulerMetrics();
  scheduler.pendingByRuntime.set('ns/rt', 1);
  const recovery = new RecoveryMetrics();
  recovery.recovery('PodGone', 'Requeued');
  recovery.fenceWait(1);

  const [runtimedPort = 0] = await freePorts(1);
  const runtimed = await startPrometheusMetrics(LOOPBACK, runtimedPort);
  const gateway = await startMetricsServer(LOOPBACK, 0);
  // What the leader-elected services render beside their own (controller-runtime's serviceProcess).
  const shared = (): string => new LeaderElectionMetrics().render() + new ProcessMetrics().render();
  try {
    runtimed.metrics.registration('registered');
    runtimed.metrics.taskFinished('succeeded', 1);
    runtimed.metrics.statusConflict();
    runtimed.metrics.leaseRenewal(true);
    runtimed.metrics.invocation({ port: 'grpc', route: 'local', code: 'OK' });
    runtimed.metrics.authz.cacheRequest('hit');
    runtimed.metrics.authz.review('allowed');
    runtimed.metrics.observeActiveFunctions(() => 1);
    const fn = { namespace: 'ns', runtime: 'rt', run: 'fn' };
    runtimed.metrics.functions.observeHeld(() => [{ ...fn, readySinceMs: undefined }]);
    runtimed.metrics.functions.invocationStarted(fn)('OK');
    gateway.metrics.requestStarted();
    gateway.metrics.requestFinished('functions', 200, 0.01, 0.005);
    return {
      scheduler: scheduler.render() + shared(),
      // Its endpoint serves both, as controllerManagerProcess wires them.
      'controller-manager':
        renderManagerMetrics({
          runtimes: [{ namespace: 'ns', name: 'rt', runsPerPod: 1, desiredPods: 1, maxPods: 2 }],
          runs: [{ namespace: 'ns', runtime: 'rt', phase: 'Pending', cleanupPending: false, deleting: false }],
          pods: [],
        }) +
        new ScheduleMetrics().render() +
        new InputMetrics().render() +
        shared(),
      'stale-recovery': recovery.render() + shared(),
      runtimed: await scrape(`http://${LOOPBACK}:${runtimedPort}/metrics`),
      'runtime-gateway': await scrape(`http://${LOOPBACK}:${gateway.address.port}/metrics`),
    };
  } finally {
    await runtimed.shutdown();
    await gateway.shutdown();
  }
}

/** kruntimes_* words in the sources that name no metric: the stock sandbox handler's Python module. */
const NOT_METRICS = new Set(['kruntimes_sandbox']);

/** Metric-like names written in the services' sources (code and doc tables), tests excluded. */
function namesInSources(): Set<string> {
  const names = new Set<string>();
  for (const top of ['libs', 'apps']) {
    for (const project of readdirSync(join(WORKSPACE_ROOT, top))) {
      const src = join(WORKSPACE_ROOT, top, project, 'src');
      let files: string[];
      try {
        files = readdirSync(src, { recursive: true, encoding: 'utf8' });
      } catch {
        continue;
      }
      for (const file of files.filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
        for (const match of readFileSync(join(src, file), 'utf8').matchAll(/\bkruntimes_[a-z0-9_]+\b/g)) {
          if (!NOT_METRICS.has(match[0])) names.add(match[0]);
        }
      }
    }
  }
  return names;
}

describe(`the exported metrics list (${EXPORTED_METRICS_FILE})`, () => {
  const listed = readExportedMetrics(WORKSPACE_ROOT);

  it('names each metric family once', () => {
    const names = listed.map((metric) => metric.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('is exactly what the services expose on /metrics, with the same types', async () => {
    // A family several services export is listed once, with the services comma-separated in this order.
    const found = new Map<string, { name: string; type: string; services: string[] }>();
    for (const [service, text] of Object.entries(await expositions())) {
      // The OpenTelemetry exporter adds target_info (its resource); ours are kruntimes_*.
      for (const [name, type] of familiesOfExposition(text)) {
        if (!name.startsWith('kruntimes_')) continue;
        const family = found.get(name) ?? { name, type, services: [] };
        family.services.push(service);
        found.set(name, family);
      }
    }
    const scraped = [...found.values()].map(({ name, type, services }) => ({ name, type, service: services.join(',') }));
    const byName = (a: { name: string }, b: { name: string }): number => a.name.localeCompare(b.name);
    expect(scraped.sort(byName)).toEqual(listed.map((metric) => ({ ...metric })).sort(byName));
  });

  it('covers every kruntimes_* name written in the sources', () => {
    const families = new Set(listed.map((metric) => metric.name));
    const unlisted = [...namesInSources()].filter((name) => !families.has(name) && !families.has(name.replace(/_(bucket|sum|count)$/, '')));
    expect(unlisted).toEqual([]);
  });
});
