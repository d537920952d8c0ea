import type { V1Pod } from '@kubernetes/client-node';
import type { Run, Runtime } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { kruntimesClients } from '@kruntimes/run-client';
import type { KruntimesClients } from '@kruntimes/run-client';
import { podLabelSelector, CONTAINERS } from '@kruntimes/runtime-workload';
import type { ControlPlane } from '@kruntimes/testing';
import type { System } from '../src/index.ts';
import type { SeededRandom } from './random.ts';
import { FAULT_KINDS } from './kinds.ts';
import type { FaultKind } from './kinds.ts';

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  start: number;
  end: number;
  /** Function Runs whose owner the fault hit: their callers measure the time to recover. */
  affectedRuns: string[];
  /**
   * Every Run (task or function) held by a Pod the fault hit when it began (for a rollout or a
   * scale-down: by any Pod of the Runtime, since the Deployment picks which go).
   */
  heldRuns: string[];
  /** A declared window: connection errors then are the fault's, not the platform's. */
  window?: 'gateway' | 'apiserver';
  error?: string;
}

/** Holds a Pod past runtimed's Lease (4 s in the soak) before thawing it. */
const FREEZE_MS = 8_000;
const ZOMBIE_MS = 10_000;
const COMPONENT_DOWN_MS = 3_000;
const ETCD_FROZEN_MS = 4_000;
/** A rollout or a scale-down and back: how long the pool may take to settle before the fault is reported failed. */
const POOL_CHANGE_MS = 120_000;
/** A scale-down holds the smaller pool this long before scaling back. */
const SCALED_DOWN_MS = 5_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class Faults {
  readonly records: FaultRecord[] = [];
  readonly #zombies = new Set<string>();
  readonly #clients: KruntimesClients;
  /** Each rollout sets a new CPU request, so the Pod template changes every time. */
  #rollouts = 0;

  readonly system: System;
  readonly controlPlane: ControlPlane;
  readonly runtimes: readonly string[];
  readonly random: SeededRandom;
  /** The kinds drawn from (all of them by default: a seed then replays as it always did). */
  readonly kinds: readonly FaultKind[];

  constructor(
    system: System,
    controlPlane: ControlPlane,
    runtimes: readonly string[],
    random: SeededRandom,
    kinds: readonly FaultKind[] = FAULT_KINDS,
  ) {
    this.system = system;
    this.controlPlane = controlPlane;
    this.runtimes = runtimes;
    this.random = random;
    this.kinds = kinds;
    this.#clients = kruntimesClients(system.admin);
  }

  /** One fault of a kind chosen by the generator, carried out to its end. */
  async inject(): Promise<FaultRecord> {
    const kind = this.random.pick(this.kinds);
    const start = Date.now();
    const record: FaultRecord = { kind, target: '', start, end: start, affectedRuns: [], heldRuns: [] };
    try {
      await this.#carryOut(kind, record);
    } catch (error) {
      record.error = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    }
    record.end = Date.now();
    this.records.push(record);
    return record;
  }

  /** Zombies left by the soak's faults are ended at the end (their processes still run). */
  async killZombies(): Promise<void> {
    for (const uid of this.#zombies) await this.system.node.killZombie(uid).catch(() => undefined);
    this.#zombies.clear();
  }

  async #carryOut(kind: FaultKind, record: FaultRecord): Promise<void> {
    const { system } = this;
    switch (kind) {
      case 'delete-pod': {
        const pod = await this.#victim(record);
        await system.core.deleteNamespacedPod({ namespace: system.name, name: pod.metadata?.name ?? '' });
        return;
      }
      case 'freeze-pod': {
        const name = (await this.#victim(record)).metadata?.name ?? '';
        system.node.freezePod(system.name, name);
        await sleep(FREEZE_MS);
        system.node.thawPod(system.name, name);
        return;
      }
      case 'zombie': {
        const name = (await this.#victim(record)).metadata?.name ?? '';
        const uid = await system.node.forceDeletePod(system.name, name);
        this.#zombies.add(uid);
        await sleep(ZOMBIE_MS);
        await system.node.killZombie(uid).catch(() => undefined);
        this.#zombies.delete(uid);
        return;
      }
      case 'kill-runtimed':
      case 'kill-runtime-server': {
        const name = (await this.#victim(record)).metadata?.name ?? '';
        system.node.crashContainer(system.name, name, kind === 'kill-runtimed' ? CONTAINERS.runtimed : CONTAINERS.runtimeServer);
        return;
      }
      case 'restart-gateway':
        record.target = 'runtime-gateway';
        record.window = 'gateway';
        await system.restartGateway();
        return;
      case 'kill-scheduler':
        record.target = 'scheduler';
        await system.restartScheduler(COMPONENT_DOWN_MS);
        return;
      case 'kill-stale-recovery':
        record.target = 'stale-recovery';
        await system.restartStaleRecovery(COMPONENT_DOWN_MS);
        return;
      case 'restart-apiserver':
        record.target = 'kube-apiserver';
        record.window = 'apiserver';
        await this.controlPlane.restartApiServer({ downMs: COMPONENT_DOWN_MS });
        return;
      case 'rollout':
      case 'scale-down':
      case 'evict-pod':
        await this.#plan(kind, record);
        return;
      case 'freeze-etcd': {
        record.target = 'etcd';
        record.window = 'apiserver';
        const thaw = this.controlPlane.freezeEtcd();
        await sleep(ETCD_FROZEN_MS);
        thaw();
        return;
      }
    }
  }

  /** A rollout, a scale-down (and back) or an eviction: every Pod that goes drains. */
  async #plan(kind: FaultKind, record: FaultRecord): Promise<void> {
    const { system } = this;
    if (kind === 'evict-pod') {
      const name = (await this.#victim(record)).metadata?.name ?? '';
      // The Eviction API honours the Runtime's PodDisruptionBudget (429 while another Pod is down).
      await system.core.createNamespacedPodEviction({
        namespace: system.name,
        name,
        body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { namespace: system.name, name } },
      });
      return;
    }
    const runtime = this.random.pick(this.runtimes);
    const before = await this.#runsOf(runtime);
    record.target = runtime;
    record.heldRuns = before.filter((run) => run.status?.assignedPodUID !== undefined).map((run) => run.metadata.name ?? '');
    const replicas = (await this.#runtime(runtime)).spec.replicas ?? 1;
    if (kind === 'rollout') {
      this.#rollouts += 1;
      await this.#patchRuntime(runtime, { spec: { resources: { requests: { cpu: `${String(10 + this.#rollouts)}m` } } } });
      await this.#waitPods(runtime, replicas, (pods) => pods.every((pod) => pod.metadata?.deletionTimestamp === undefined));
    } else {
      if (replicas < 2) throw new Error(`${runtime} has ${String(replicas)} Pod; nothing to scale down`);
      await this.#patchRuntime(runtime, { spec: { replicas: replicas - 1 } });
      await this.#waitPods(runtime, replicas - 1, (pods) => pods.length === replicas - 1);
      await sleep(SCALED_DOWN_MS);
      await this.#patchRuntime(runtime, { spec: { replicas } });
      await this.#waitPods(runtime, replicas, () => true);
    }
    // The function Runs that moved are the ones the fault hit: their callers measure the time to recover.
    const podBefore = new Map(before.map((run) => [run.metadata.uid ?? '', run.status?.assignedPodUID]));
    record.affectedRuns = (await this.#runsOf(runtime))
      .filter((run) => run.spec.mode.function !== undefined)
      .filter((run) => podBefore.get(run.metadata.uid ?? '') !== run.status?.assignedPodUID)
      .map((run) => run.metadata.name ?? '');
  }

  async #runtime(name: string): Promise<Runtime> {
    const runtime = await this.#clients.runtimes.get(this.system.name, name);
    if (runtime === undefined) throw new Error(`Runtime ${name} not found`);
    return runtime;
  }

  async #patchRuntime(name: string, patch: { spec: Partial<Runtime['spec']> }): Promise<void> {
    const result = await this.#clients.runtimes.mergePatch(this.system.name, name, patch);
    if (!result.ok) throw new Error(`patching Runtime ${name}: ${result.reason}`);
  }

  async #runsOf(runtime: string): Promise<Run[]> {
    return (await this.#clients.runs.list(this.system.name)).filter((run) => run.spec.runtime === runtime);
  }

  /** Until the Runtime has `count` ready Pods, all of its newest template, and `settled` holds of its Pods (bounded). */
  async #waitPods(runtime: string, count: number, settled: (pods: V1Pod[]) => boolean): Promise<void> {
    const deadline = Date.now() + POOL_CHANGE_MS;
    for (;;) {
      const pods = (await this.system.core.listNamespacedPod({ namespace: this.system.name, labelSelector: podLabelSelector(runtime) }))
        .items;
      const ready = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
      const current = await this.#runtime(runtime);
      // The status of the spec just written (the controller may not have reconciled it yet), and that spec rolled out.
      const rolled =
        (current.status?.observedGeneration ?? 0) >= (current.metadata.generation ?? 0) &&
        current.status?.conditions?.find((c) => c.type === 'Progressing')?.status !== 'True';
      if (ready.length >= count && rolled && settled(pods)) return;
      if (Date.now() > deadline)
        throw new Error(`${runtime}: ${String(ready.length)} of ${String(count)} Pods ready after ${String(POOL_CHANGE_MS)} ms`);
      await sleep(500);
    }
  }

  /** A ready Runtime Pod chosen by the generator; its function Runs are the fault's affected Runs. */
  async #victim(record: FaultRecord): Promise<V1Pod> {
    const runtime = this.random.pick(this.runtimes);
    const pods = (
      await this.system.core.listNamespacedPod({ namespace: this.system.name, labelSelector: podLabelSelector(runtime) })
    ).items.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
    if (pods.length === 0) throw new Error(`no ready Pod of ${runtime}`);
    const pod = this.random.pick(pods);
    const held = (await this.#clients.runs.list(this.system.name)).filter((run) => run.status?.assignedPodUID === pod.metadata?.uid);
    record.target = `${runtime}/${pod.metadata?.name ?? ''}`;
    record.heldRuns = held.map((run) => run.metadata.name ?? '');
    record.affectedRuns = held.filter((run) => run.spec.mode.function !== undefined).map((run) => run.metadata.name ?? '');
    return pod;
  }
}
