import type { V1Pod } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { podLabelSelector, CONTAINERS } from '@kruntimes/runtime-workload';
import type { ControlPlane } from '@kruntimes/testing';
import type { System } from '../src/index.ts';
import type { SeededRandom } from './random.ts';

export const FAULT_KINDS = [
  'delete-pod',
  'freeze-pod',
  'zombie',
  'kill-runtimed',
  'kill-runtime-server',
  'restart-gateway',
  'kill-scheduler',
  'kill-stale-recovery',
  'restart-apiserver',
  'freeze-etcd',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  start: number;
  end: number;
  /** Function Runs whose owner the fault hit: their callers measure the time to recover. */
  affectedRuns: string[];
  /** A declared window: connection errors then are the fault's, not the platform's. */
  window?: 'gateway' | 'apiserver';
  error?: string;
}

/** Holds a Pod past runtimed's Lease (4 s in the soak) before thawing it. */
const FREEZE_MS = 8_000;
const ZOMBIE_MS = 10_000;
const COMPONENT_DOWN_MS = 3_000;
const ETCD_FROZEN_MS = 4_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class Faults {
  readonly records: FaultRecord[] = [];
  readonly #zombies = new Set<string>();

  readonly system: System;
  readonly controlPlane: ControlPlane;
  readonly runtimes: readonly string[];
  readonly random: SeededRandom;

  constructor(system: System, controlPlane: ControlPlane, runtimes: readonly string[], random: SeededRandom) {
    this.system = system;
    this.controlPlane = controlPlane;
    this.runtimes = runtimes;
    this.random = random;
  }

  /** One fault of a kind chosen by the generator, carried out to its end. */
  async inject(): Promise<FaultRecord> {
    const kind = this.random.pick(FAULT_KINDS);
    const start = Date.now();
    const record: FaultRecord = { kind, target: '', start, end: start, affectedRuns: [] };
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

  /** A ready Runtime Pod chosen by the generator; its function Runs are the fault's affected Runs. */
  async #victim(record: FaultRecord): Promise<V1Pod> {
    const runtime = this.random.pick(this.runtimes);
    const pods = (
      await this.system.core.listNamespacedPod({ namespace: this.system.name, labelSelector: podLabelSelector(runtime) })
    ).items.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
    if (pods.length === 0) throw new Error(`no ready Pod of ${runtime}`);
    const pod = this.random.pick(pods);
    const runs = (
      (await this.system.objects.listNamespacedCustomObject({
        group: 'kruntimes.io',
        version: 'v1alpha1',
        namespace: this.system.name,
        plural: 'runs',
      })) as {
        items: Run[];
      }
    ).items;
    record.target = `${runtime}/${pod.metadata?.name ?? ''}`;
    record.affectedRuns = runs
      .filter((run) => run.status?.assignedPodUID === pod.metadata?.uid && run.spec.mode.function !== undefined)
      .map((run) => run.metadata.name ?? '');
    return pod;
  }
}
