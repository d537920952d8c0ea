/**
 * Profiling aid (not the bench): the elastic burst alone, with its timeline on this process's clock:
 * spec.replicas changes, each Pod's creation / ready, and per second the Runs bound / Running / ended, plus per Pod
 * its first bind. Logs kept: their directory is printed.
 *   node tools/benchmarks/src/elastic-profile.ts [tasks=200] [maxPods=8] [runsPerPod=4] [fixed=0]
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { Watch } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '@kruntimes/api';
import type { Run, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { System } from '@kruntimes/e2e';
import { kruntimesClients, refusalError } from '@kruntimes/run-client';
import { Cluster, ControlPlane, REPO_ROOT, RunPhaseWatch } from '@kruntimes/testing';

const TASKS = Number(process.argv[2] ?? 200);
const MAX_PODS = Number(process.argv[3] ?? 8);
const RUNS_PER_POD = Number(process.argv[4] ?? 4);
const FIXED = process.argv[5] === '1';
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
let system: System | undefined;
try {
  system = await System.start({ prefix: 'prof-elastic', cluster: new Cluster(controlPlane.info), gateway: false });
  const current = system;
  const clients = kruntimesClients(current.admin);
  const watch = await RunPhaseWatch.start(current.admin, current.name);
  const runtimeName = FIXED ? 'fixed' : 'elastic';
  let t0 = 0;
  const t = (): string => ((performance.now() - t0) / 1000).toFixed(2);
  const events: string[] = [];
  const podFirst = new Map<string, { created?: string; ready?: string; deleted?: string; uid?: string | undefined }>();
  const runBind = new Map<string, { pod: string; at: number }>();
  const w = new Watch(current.admin);
  const aborts: (() => void)[] = [];
  const req1 = await w.watch(
    `/api/v1/namespaces/${current.name}/pods`,
    {},
    (type: string, pod: V1Pod) => {
      if (t0 === 0) return;
      const name = pod.metadata?.name ?? '';
      const entry = podFirst.get(name) ?? {};
      if (entry.created === undefined) {
        entry.created = t();
        entry.uid = pod.metadata?.uid;
        events.push(`${t()} pod ${name} seen (${type})`);
      }
      if (entry.ready === undefined && isPodReady(pod)) {
        entry.ready = t();
        events.push(`${t()} pod ${name} ready`);
      }
      if (entry.deleted === undefined && pod.metadata?.deletionTimestamp !== undefined) {
        entry.deleted = t();
        events.push(`${t()} pod ${name} deleting`);
      }
      podFirst.set(name, entry);
    },
    () => undefined,
  );
  aborts.push(() => {
    req1.abort();
  });
  let lastReplicas: number | undefined;
  const req2 = await w.watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${current.name}/runtimes`,
    {},
    (_type: string, runtime: Runtime & { metadata: { name: string } }) => {
      if (t0 === 0 || runtime.metadata.name !== runtimeName) return;
      if (runtime.spec.replicas !== lastReplicas) {
        lastReplicas = runtime.spec.replicas;
        events.push(`${t()} spec.replicas=${String(runtime.spec.replicas)}`);
      }
    },
    () => undefined,
  );
  aborts.push(() => {
    req2.abort();
  });
  const writes = { total: 0, waiting: 0 };
  const dump: string[] = [];
  const req3 = await w.watch(
    `/apis/${API_GROUP}/${API_VERSION}/namespaces/${current.name}/runs`,
    {},
    (_type: string, run: Run & { metadata: { name: string } }) => {
      if (t0 === 0) return;
      writes.total += 1;
      dump.push(
        JSON.stringify({
          t: (performance.now() - t0) / 1000,
          type: _type,
          name: run.metadata.name,
          phase: run.status?.phase,
          reason: run.status?.reason,
          pod: run.status?.assignedPod,
          fin: (run.metadata as { finalizers?: string[] }).finalizers?.length ?? 0,
          del: (run.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined,
        }),
      );
      if (run.status?.reason === 'WaitingForCapacity') writes.waiting += 1;
      const pod = run.status?.assignedPod;
      if (pod !== undefined && !runBind.has(run.metadata.name)) runBind.set(run.metadata.name, { pod, at: performance.now() });
    },
    () => undefined,
  );
  aborts.push(() => {
    req3.abort();
  });

  const spec: Partial<RuntimeSpec> & Pick<RuntimeSpec, 'language'> = {
    language: 'bash',
    runs: RUNS_PER_POD,
    drainSeconds: 10,
    ...(FIXED ? { replicas: MAX_PODS } : { scaling: { minReplicas: 1, maxReplicas: MAX_PODS, scaleDownDelaySeconds: 10 } }),
  };
  log(`load ${loadavg()[0]?.toFixed(1) ?? '?'}`);
  await current.createRuntime(runtimeName, spec);
  await current.waitRuntimeReady(runtimeName, FIXED ? MAX_PODS : 1);
  const names = Array.from({ length: TASKS }, (_, i) => `${runtimeName}-${String(i)}`);
  t0 = performance.now();
  await Promise.all(
    names.map(async (name) => {
      const created = await clients.runs.create(current.name, {
        apiVersion: `${API_GROUP}/${API_VERSION}`,
        kind: 'Run',
        metadata: { name },
        spec: { runtime: runtimeName, source: { inline: 'sleep 2' }, mode: { task: {} } },
      });
      if (!created.ok) throw refusalError(created);
    }),
  );
  events.push(`${t()} all ${String(TASKS)} created`);
  const ended = (name: string): boolean => ['Succeeded', 'Failed', 'Interrupted'].some((p) => watch.seenAt(name, p) !== undefined);
  await watch.until(() => names.every(ended), 600_000, 'every task ended');
  events.push(`${t()} all ended`);
  const rel = (at: number | undefined): number => (at === undefined ? Number.NaN : (at - t0) / 1000);
  const end = Math.ceil(Math.max(...names.map((n) => rel(watch.seenAt(n, 'Succeeded')))));
  log(`-- events (${runtimeName}, load ${loadavg()[0]?.toFixed(1) ?? '?'})`);
  for (const e of events.sort((a, b) => Number.parseFloat(a) - Number.parseFloat(b))) log(e);
  log('-- per second: bound(cum) running(now) succeeded(cum)');
  for (let s = 0; s <= end; s += 1) {
    const bound = names.filter((n) => rel(runBind.get(n)?.at) <= s).length;
    const running = names.filter((n) => rel(watch.seenAt(n, 'Running')) <= s && !(rel(watch.seenAt(n, 'Succeeded')) <= s)).length;
    const done = names.filter((n) => rel(watch.seenAt(n, 'Succeeded')) <= s).length;
    log(`t=${String(s)} bound ${String(bound)} running ${String(running)} done ${String(done)}`);
  }
  log('-- per Pod: created ready firstBind binds');
  for (const [pod, entry] of podFirst) {
    const binds = [...runBind.values()].filter((b) => b.pod === pod);
    const first = binds.length === 0 ? Number.NaN : Math.min(...binds.map((b) => rel(b.at)));
    log(`${pod} created ${entry.created ?? '-'} ready ${entry.ready ?? '-'} firstBind ${first.toFixed(2)} binds ${String(binds.length)}`);
  }
  // bind -> Running (claim) latency
  const claims = names.map((n) => rel(watch.seenAt(n, 'Running')) - rel(runBind.get(n)?.at)).sort((a, b) => a - b);
  log(`bind->Running p50 ${claims[Math.floor(claims.length / 2)]?.toFixed(2) ?? '?'} max ${claims.at(-1)?.toFixed(2) ?? '?'}`);
  const runTimes = names.map((n) => rel(watch.seenAt(n, 'Succeeded')) - rel(watch.seenAt(n, 'Running'))).sort((a, b) => a - b);
  log(`Running->Succeeded p50 ${runTimes[Math.floor(runTimes.length / 2)]?.toFixed(2) ?? '?'} max ${runTimes.at(-1)?.toFixed(2) ?? '?'}`);
  log(`run watch events ${String(writes.total)}, of which WaitingForCapacity ${String(writes.waiting)}`);
  log(`logs: ${current.dir}`);
  writeFileSync(join(current.dir, 'events.jsonl'), `${dump.join('\n')}\n`);
  for (const abort of aborts) abort();
  watch.stop();
  await current.stop({ keepLogs: true });
  system = undefined;
} finally {
  await system?.stop({ keepLogs: true });
  await controlPlane.stop();
}
