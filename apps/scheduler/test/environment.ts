import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Run, RunSpec, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { CONTROLLER_MANAGER_RULES, ControllerManager } from '@kruntimes/controller-manager-core';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run Runtime Pods as real processes through the local node agent (a tool)
import { LocalNode } from '@kruntimes/local-node';
import { currentPhase, holdsCapacity, transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { Cluster, NamespaceAccess, REPO_ROOT, waitFor, testWorkloadConfig } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';

export const cluster = Cluster.fromEnvironment();
export const admin = cluster.kubeConfig();
export const core = admin.makeApiClient(CoreV1Api);
export const objects = admin.makeApiClient(CustomObjectsApi);
export const WAIT = { timeoutMs: 90_000, intervalMs: 200 };

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** A ServiceAccount bound to exactly `rules` in the namespace; returns a token of it. */
export async function serviceAccountToken(namespace: string, name: string, rules: readonly Rule[]): Promise<string> {
  return new NamespaceAccess(cluster, namespace).serviceAccountToken(name, rules);
}

/** The same, as a KubeConfig. */
export async function serviceAccountKubeConfig(namespace: string, name: string, rules: readonly Rule[]): Promise<KubeConfig> {
  return new NamespaceAccess(cluster, namespace).serviceAccountKubeConfig(name, rules);
}

/** Errors are collected so that a test can assert nothing went wrong silently. */
export function recordingLogger(): ControllerLogger & { errors: { object: object; message: string }[] } {
  const errors: { object: object; message: string }[] = [];
  return { errors, error: (object, message) => errors.push({ object, message }), debug: () => undefined };
}

/** A task Run that echoes, created by the admin. */
export async function createRunIn(namespace: string, name: string, runtime: string, spec: Partial<RunSpec> = {}): Promise<Run> {
  const body: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime, source: { inline: 'echo hi' }, mode: { task: {} }, ...spec },
  };
  return (await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace,
    plural: RUN_PLURAL,
    body,
  })) as Run;
}

export async function deleteRunIn(namespace: string, name: string): Promise<void> {
  await objects.deleteNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural: RUN_PLURAL, name });
}

/**
 * A namespace with a local node that runs Runtime Pods: the runtimed container is a
 * health-only stand-in (the tests drive Runs themselves), the Runtime Server is the real
 * Bash one. The controller-manager runs in-process, scoped to the namespace.
 */
type SchedulerOptions = ConstructorParameters<typeof Scheduler>[0];

export class Environment {
  readonly namespace: TestNamespace;
  readonly node: LocalNode;
  readonly manager: ControllerManager;
  /** The controller-manager's logger. */
  readonly logger: ReturnType<typeof recordingLogger>;
  /** The internal CA the controller-manager issues runtimed certificates from (clients trust ca.crt). */
  readonly internalCa: CertificateAuthority;
  readonly #stateDir: string;

  private constructor(
    namespace: TestNamespace,
    node: LocalNode,
    manager: ControllerManager,
    stateDir: string,
    logger: ReturnType<typeof recordingLogger>,
    internalCa: CertificateAuthority,
  ) {
    this.namespace = namespace;
    this.internalCa = internalCa;
    this.logger = logger;
    this.node = node;
    this.manager = manager;
    this.#stateDir = stateDir;
  }

  /**
   * `runtimed: 'real'` runs the real runtimed (apps/runtimed) with the RBAC it needs, for
   * end-to-end checks; the default stand-in only serves health, and the test drives Runs.
   */
  static async start(
    prefix: string,
    options: { finishedRunsPerRuntime?: number; runtimed?: 'fake' | 'real'; runtimedEnv?: Record<string, string> } = {},
  ): Promise<Environment> {
    const namespace = await cluster.createNamespace({ prefix, waitForDefaultServiceAccount: true });
    const real = options.runtimed === 'real';
    if (real) {
      await new NamespaceAccess(cluster, namespace.name).grantServiceAccount('default', 'runtimed', RUNTIMED_ROLE_RULES);
    }
    const stateDir = await mkdtemp(join(tmpdir(), `${prefix}-`));
    const node = new LocalNode(
      admin,
      {
        nodeName: namespace.name,
        stateDir,
        namespaces: [namespace.name],
        images: {
          // runtimedEnv: the image's ENV (e.g. a short KRT_LEASE_DURATION_SECONDS), which the Pod template does not set.
          'kruntimes/runtimed': {
            entrypoint: [
              process.execPath,
              join(REPO_ROOT, real ? 'apps/runtimed/src/main.ts' : 'apps/scheduler/test/fixtures/fake-runtimed.ts'),
            ],
            ...(options.runtimedEnv === undefined ? {} : { env: options.runtimedEnv }),
          },
          'kruntimes/runtime-server-bash': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-bash/src/main.ts')] },
          'kruntimes/runtime-server-python': { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')] },
        },
        kubeletServer: cluster.info.kubeletServer,
      },
      { deleteNodeOnStop: true },
    );
    await node.start();
    const logger = recordingLogger();
    const internalCa = await createCertificateAuthority();
    const manager = new ControllerManager({
      internalCa,
      // Least privilege: what the chart grants, so a missing rule fails here.
      kubeConfig: await serviceAccountKubeConfig(namespace.name, 'controller-manager', CONTROLLER_MANAGER_RULES),
      namespace: namespace.name,
      logger,
      workload: testWorkloadConfig({ terminationGracePeriodSeconds: 2 }),
      ...(options.finishedRunsPerRuntime === undefined ? {} : { finishedRunsPerRuntime: options.finishedRunsPerRuntime }),
    });
    await manager.start();
    return new Environment(namespace, node, manager, stateDir, logger, internalCa);
  }

  /**
   * A scheduler of this namespace, with the chart's least-privilege rules as its own
   * ServiceAccount, started. `options`: what a test sets beyond that (workers, bindConcurrency).
   */
  async startScheduler(logger: ControllerLogger, options: Pick<SchedulerOptions, 'workers' | 'bindConcurrency'> = {}): Promise<Scheduler> {
    const scheduler = new Scheduler({
      kubeConfig: await serviceAccountKubeConfig(this.name, 'scheduler', SCHEDULER_RULES),
      namespace: this.name,
      logger,
      ...options,
    });
    await scheduler.start();
    return scheduler;
  }

  async stop(): Promise<void> {
    await this.manager.stop();
    await this.node.stop({ graceMs: 2_000 });
    await rm(this.#stateDir, { recursive: true, force: true });
    await this.namespace.delete();
  }

  get name(): string {
    return this.namespace.name;
  }

  async createRuntime(name: string, spec: Partial<RuntimeSpec>): Promise<void> {
    const body: Runtime = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Runtime', metadata: { name }, spec: { language: 'bash', ...spec } };
    await objects.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUNTIME_PLURAL,
      body,
    });
  }

  async getRuntime(name: string): Promise<Runtime> {
    return (await objects.getNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUNTIME_PLURAL,
      name,
    })) as Runtime;
  }

  async createRun(name: string, runtime: string, spec: Partial<RunSpec> = {}): Promise<Run> {
    return createRunIn(this.name, name, runtime, spec);
  }

  async deleteRun(name: string): Promise<void> {
    await deleteRunIn(this.name, name);
  }

  async getRun(name: string): Promise<Run> {
    return (await objects.getNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      name,
    })) as Run;
  }

  async listRuns(): Promise<Run[]> {
    return (
      (await objects.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: this.name, plural: RUN_PLURAL })) as {
        items: Run[];
      }
    ).items;
  }

  /** Plays another writer (runtimed, stale-recovery): one fenced status write through the state machine. */
  async act(name: string, writer: WriterRole, event: RunEvent): Promise<Run> {
    const run = await this.getRun(name);
    const result = transition({ run, event, writer, now: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
    if (!result.ok) throw result.error;
    return (await objects.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      name,
      body: { ...run, status: result.status },
    })) as Run;
  }

  async readyPods(runtime: string, count: number): Promise<V1Pod[]> {
    return waitFor(
      `${count} ready Pods of Runtime ${runtime}`,
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: this.name, labelSelector: podLabelSelector(runtime) })).items;
        const ready = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
        return ready.length === count ? ready : undefined;
      },
      WAIT,
    );
  }

  async waitForRun(name: string, what: string, predicate: (run: Run) => boolean): Promise<Run> {
    return waitFor(
      `Run ${name}: ${what}`,
      async () => {
        const run = await this.getRun(name);
        return predicate(run) ? run : undefined;
      },
      WAIT,
    );
  }

  /** Watches the namespace's Runs and records every state it ever saw (see RunObserver). */
  async observeRuns(capacityPerPod: number): Promise<RunObserver> {
    const observer = new RunObserver(capacityPerPod);
    const list = (await objects.listNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
    })) as {
      items: Run[];
      metadata: { resourceVersion: string };
    };
    for (const run of list.items) observer.apply('ADDED', run);
    const request = await new Watch(admin).watch(
      `/apis/${API_GROUP}/${API_VERSION}/namespaces/${this.name}/${RUN_PLURAL}`,
      { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: false },
      (type: string, object: Run) => {
        observer.apply(type, object);
      },
      (error: unknown) => {
        if (error !== undefined && error !== null && !observer.stopped) observer.watchErrors.push(error);
      },
    );
    observer.abort = () => {
      request.abort();
    };
    return observer;
  }
}

/**
 * Every version of every Run the watch delivered, checked as it arrives: how many Runs
 * hold capacity on each Pod at that moment (the maximum is kept), and every Pod a Run
 * was ever assigned to in its first attempt (more than one would be a double bind).
 */
export class RunObserver {
  readonly capacityPerPod: number;
  readonly current = new Map<string, Run>();
  readonly assignments = new Map<string, Set<string>>();
  readonly everAssigned = new Set<string>();
  maxHeld = 0;
  /** The most Runs of the namespace that held a unit at one moment, over all its Pods. */
  maxHeldInNamespace = 0;
  overcommits: string[] = [];
  watchErrors: unknown[] = [];
  stopped = false;
  abort: () => void = () => undefined;

  constructor(capacityPerPod: number) {
    this.capacityPerPod = capacityPerPod;
  }

  apply(type: string, run: Run): void {
    const name = run.metadata.name ?? '';
    if (type === 'DELETED') this.current.delete(name);
    else this.current.set(name, run);
    const pod = run.status?.assignedPodUID;
    if (pod !== undefined) {
      this.everAssigned.add(name);
      const pods = this.assignments.get(name) ?? new Set<string>();
      pods.add(pod);
      this.assignments.set(name, pods);
    }
    const held = new Map<string, number>();
    for (const r of this.current.values()) {
      const podUID = r.status?.assignedPodUID;
      const cleanup = r.metadata.finalizers?.includes('kruntimes.io/registration-cleanup') === true;
      if (podUID !== undefined && holdsCapacity(currentPhase(r), cleanup)) held.set(podUID, (held.get(podUID) ?? 0) + 1);
    }
    this.maxHeldInNamespace = Math.max(
      this.maxHeldInNamespace,
      [...held.values()].reduce((sum, count) => sum + count, 0),
    );
    for (const [podUID, count] of held) {
      this.maxHeld = Math.max(this.maxHeld, count);
      if (count > this.capacityPerPod)
        this.overcommits.push(`${podUID} held ${count} after ${type} ${name}@${run.metadata.resourceVersion ?? ''}`);
    }
  }

  /** Runs assigned to more than one Pod over their lifetime. */
  doubleBound(): string[] {
    return [...this.assignments].filter(([, pods]) => pods.size > 1).map(([name]) => name);
  }

  stop(): void {
    this.stopped = true;
    this.abort();
  }
}
