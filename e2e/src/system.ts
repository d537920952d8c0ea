/**
 * The full system for end-to-end tests, one per test namespace, on the control plane of
 * the integration run: control plane access (`NamespaceAccess` of @kruntimes/testing: runtimed's RBAC, a
 * least-privilege ServiceAccount per service), Runtime Pods (`runtime-pods.ts`: the local
 * node runs runtimed and the Runtime Servers as processes on 127.0.0.x), services
 * (`services.ts`: controller-manager with an internal CA, scheduler, optionally
 * stale-recovery, in-process; `gateway-process.ts`: the runtime-gateway as a child
 * process, HTTPS from a test CA) and callers (`callers.ts`: users, tokens, invokes).
 * Every component logs to a file under one directory, so that a test can read them all
 * (`logs()`, e.g. to check that no token was ever logged). `stop()` leaves no process.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { CoreV1Api, CustomObjectsApi, KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { Run, RunSpec, Runtime, RuntimeSpec } from '@kruntimes/api';
import type { ControllerManager } from '@kruntimes/controller-manager-core';
import type { LocalNode } from '@kruntimes/local-node';
import type { Scheduler } from '@kruntimes/scheduler-core';
import type { StaleRecovery } from '@kruntimes/stale-recovery-core';
import { Cluster, survivingProcesses } from '@kruntimes/testing';
import type { HttpAnswer, TestNamespace } from '@kruntimes/testing';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { issuedServiceAccountTokens } from '@kruntimes/testing';
import type { NamespaceAccess, Rule } from '@kruntimes/testing';
import { USERS, invoke, invokeUrl } from './callers.ts';
import type { InvokeOptions, InvokeRoute, UserName } from './callers.ts';
import { restartGateway, rotateServingCertificate, stopGateway } from './gateway-process.ts';
import type { GatewayProcess } from './gateway-process.ts';
import { linesContaining, logTails, readLogs } from './logs.ts';
import type { LogFile, RecordingLogger } from './logs.ts';
import { NamespaceObjects, WAIT } from './runs.ts';
import { RUNTIME_POD_STOP_GRACE_MS, projectedTokens } from './runtime-pods.ts';
import { restartedScheduler, restartedStaleRecovery } from './services.ts';
import type { Stoppable } from './services.ts';
import { startSystemParts } from './system-parts.ts';
import type { SystemOptions, SystemParts } from './system-parts.ts';

export class System {
  readonly cluster: Cluster;
  readonly admin: KubeConfig;
  readonly core: CoreV1Api;
  readonly objects: CustomObjectsApi;
  readonly rbac: RbacAuthorizationV1Api;
  readonly namespace: TestNamespace;
  readonly node: LocalNode;
  readonly internalCa: CertificateAuthority;
  readonly manager: ControllerManager;
  #scheduler: Scheduler;
  #staleRecovery: StaleRecovery | undefined;
  #gateway: GatewayProcess | undefined;
  /** In-process component loggers; `.errors` holds what each logged at error level. */
  readonly loggers: Record<string, RecordingLogger>;
  /** Every log file of every component lives under here. */
  readonly dir: string;
  readonly #access: NamespaceAccess;
  readonly #namespaceObjects: NamespaceObjects;
  readonly #extra: Stoppable[] = [];
  #stopped = false;

  private constructor(parts: SystemParts) {
    this.cluster = parts.cluster;
    this.admin = parts.cluster.kubeConfig();
    this.#namespaceObjects = new NamespaceObjects(this.admin, parts.namespace.name);
    this.core = this.#namespaceObjects.core;
    this.objects = this.#namespaceObjects.objects;
    this.rbac = this.admin.makeApiClient(RbacAuthorizationV1Api);
    this.namespace = parts.namespace;
    this.#access = parts.access;
    this.node = parts.node;
    this.internalCa = parts.internalCa;
    this.manager = parts.manager;
    this.#scheduler = parts.scheduler;
    this.#staleRecovery = parts.staleRecovery;
    this.#gateway = parts.gateway;
    this.loggers = parts.loggers;
    this.dir = parts.dir;
  }

  /** A new namespace with the whole system in it; a failed start stops what it started and removes the namespace. */
  static async start(options: SystemOptions): Promise<System> {
    const cluster = options.cluster ?? Cluster.fromEnvironment();
    const namespace = await cluster.createNamespace({ prefix: options.prefix, waitForDefaultServiceAccount: true });
    const dir = await mkdtemp(join(tmpdir(), `krt-system-${options.prefix}-`));
    const started: Stoppable[] = [];
    try {
      return new System(await startSystemParts(cluster, namespace, dir, options, started));
    } catch (error) {
      for (const component of started.reverse()) await component.stop().catch(() => undefined);
      await namespace.delete().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }

  get name(): string {
    return this.namespace.name;
  }

  get scheduler(): Scheduler {
    return this.#scheduler;
  }

  get staleRecovery(): StaleRecovery | undefined {
    return this.#staleRecovery;
  }

  get gateway(): GatewayProcess | undefined {
    return this.#gateway;
  }

  // ---- faults: a component lost and started again (soak tests) ----

  /** The gateway stopped and started again on the same port with the same certificate. */
  async restartGateway(): Promise<GatewayProcess> {
    const old = this.#gateway;
    if (old === undefined) throw new Error('this system has no gateway');
    this.#gateway = await restartGateway(old);
    return this.#gateway;
  }

  /** The scheduler stopped (its leader lost) and, after `downMs`, a new one started in its place. */
  async restartScheduler(downMs: number): Promise<void> {
    await this.#scheduler.stop();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    this.#scheduler = await restartedScheduler(this.#access, this.name, this.loggers);
  }

  /** stale-recovery stopped and, after `downMs`, a new one started in its place. */
  async restartStaleRecovery(downMs: number): Promise<void> {
    if (this.#staleRecovery === undefined) throw new Error('this system runs no stale-recovery');
    await this.#staleRecovery.stop();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    this.#staleRecovery = await restartedStaleRecovery(this.#access, this.name, this.loggers);
  }

  /** Stopped with the system, before the rest (e.g. a component a test started). */
  adopt(component: Stoppable): void {
    this.#extra.push(component);
  }

  /**
   * Stops everything (what the test adopted, the gateway, stale-recovery, scheduler,
   * controller-manager, every Pod process), checks that no process is left, removes the
   * namespace and the log directory (`keepLogs` leaves it).
   */
  async stop(options: { keepLogs?: boolean } = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    const problems: unknown[] = [];
    const attempt = async (what: () => Promise<unknown>): Promise<void> => {
      await what().catch((error: unknown) => problems.push(error));
    };
    const { gateway, staleRecovery } = this;
    for (const component of this.#extra.reverse()) await attempt(() => component.stop());
    if (gateway !== undefined) await attempt(() => stopGateway(gateway));
    if (staleRecovery !== undefined) await attempt(() => staleRecovery.stop());
    await attempt(() => this.scheduler.stop());
    await attempt(() => this.manager.stop());
    const pids = this.node.pids();
    await attempt(() => this.node.stop({ graceMs: RUNTIME_POD_STOP_GRACE_MS }));
    const survivors = await survivingProcesses([...pids, ...(gateway === undefined ? [] : [gateway.pid])]);
    if (survivors.length > 0) problems.push(new Error(`processes left running after stop: ${survivors.join(', ')}`));
    await attempt(() => this.namespace.delete());
    if (options.keepLogs !== true) await attempt(() => rm(this.dir, { recursive: true, force: true }));
    if (problems.length > 0) throw new AggregateError(problems, 'the system did not stop cleanly');
  }

  // ---- callers: users, tokens, grants ----

  /** The bearer token of a user of the control plane (admin is system:masters; alice and bob have no rights until granted). */
  token(user: UserName): string {
    return this.cluster.user(user).token;
  }

  /**
   * Every credential of the system a log must never contain: the users' tokens, the
   * ServiceAccount tokens it made, and the service-account tokens the local node
   * projected into the Runtime Pods (runtimed's own credential).
   */
  async secrets(): Promise<string[]> {
    return [...USERS.map((user) => this.token(user)), ...issuedServiceAccountTokens(), ...(await projectedTokens(this.dir))];
  }

  /** Lets `user` get Runs in this namespace (all, or only `runName`): what invoking needs. */
  async grantGetRuns(user: UserName, runName?: string): Promise<void> {
    await this.#access.grantGetRuns(user, runName);
  }

  /** A ServiceAccount of this namespace with exactly `rules`, as a token. */
  async serviceAccountToken(name: string, rules: readonly Rule[]): Promise<string> {
    return this.#access.serviceAccountToken(name, rules);
  }

  // ---- Runtimes and Runs ----

  async createRuntime(name: string, spec: Partial<RuntimeSpec> & Pick<RuntimeSpec, 'language'>): Promise<Runtime> {
    return this.#namespaceObjects.createRuntime(name, spec);
  }

  /** Resolves once `count` Pods of the Runtime are Ready (runtimed serving). */
  async waitRuntimeReady(runtime: string, count = 1): Promise<V1Pod[]> {
    return this.#explained(this.#namespaceObjects.waitRuntimeReady(runtime, count));
  }

  /** A function Run; `handler` like `main:handle` (Python) or `handle` (Bash). */
  async createFunctionRun(name: string, runtime: string, source: string, handler: string, spec: Partial<RunSpec> = {}): Promise<Run> {
    return this.#namespaceObjects.createFunctionRun(name, runtime, source, handler, spec);
  }

  async createTaskRun(name: string, runtime: string, source: string, spec: Partial<RunSpec> = {}): Promise<Run> {
    return this.#namespaceObjects.createTaskRun(name, runtime, source, spec);
  }

  async getRun(name: string): Promise<Run> {
    return this.#namespaceObjects.getRun(name);
  }

  async waitForRun(name: string, what: string, predicate: (run: Run) => boolean, timeoutMs = WAIT.timeoutMs): Promise<Run> {
    return this.#namespaceObjects.waitForRun(name, what, predicate, timeoutMs);
  }

  /** Resolves with the Run once it is Ready (phase Ready); fails at once when it ends instead. */
  async waitReady(name: string): Promise<Run> {
    return this.#explained(this.#namespaceObjects.waitReady(name));
  }

  /** The Pod a Run is assigned to (its runtimed is the owner). */
  async assignedPod(runName: string): Promise<V1Pod> {
    return this.#namespaceObjects.assignedPod(runName);
  }

  async deleteRun(name: string): Promise<void> {
    await this.#namespaceObjects.deleteRun(name);
  }

  // ---- the dataplane ----

  /** The gateway URL of a Run's invoke path. */
  invokeUrl(runtime: string, uid: string, route: InvokeRoute = 'functions'): string {
    return invokeUrl(this.#requireGateway(), this.name, runtime, uid, route);
  }

  /** One invoke through the gateway: status, headers, the JSON body (when it is JSON). */
  async invoke(options: InvokeOptions): Promise<HttpAnswer> {
    return invoke(this.#requireGateway(), this.name, options);
  }

  /**
   * Replaces the gateway's serving certificate files (same CA, same names) and returns the
   * new certificate's SHA-256 fingerprint; the gateway picks it up within its reload interval.
   */
  async rotateGatewayCertificate(): Promise<string> {
    return rotateServingCertificate(this.#requireGateway());
  }

  #requireGateway(): GatewayProcess {
    if (this.gateway === undefined) throw new Error('this system was started without the gateway');
    return this.gateway;
  }

  // ---- logs and diagnosis ----

  /** What a failed wait needs to be understood: every Run, every Pod, and the tail of every log. */
  async diagnose(tailLines = 15): Promise<string> {
    return [...(await this.#namespaceObjects.describe()), ...logTails(this.dir, await this.logs(), tailLines)].join('\n');
  }

  /** A failed wait says what the system looked like (Runs, Pods, log tails). */
  async #explained<T>(waiting: Promise<T>): Promise<T> {
    try {
      return await waiting;
    } catch (error) {
      const state = await this.diagnose().catch((diagnoseError: unknown) => `(no diagnosis: ${String(diagnoseError)})`);
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${state}`, { cause: error });
    }
  }

  /** Every log file of every component (gateway, in-process components, each Pod container): path and text. */
  async logs(): Promise<LogFile[]> {
    return readLogs(this.dir);
  }

  /** The log lines (of any component) that contain any of `needles`. */
  async logLinesContaining(needles: readonly string[]): Promise<{ file: string; line: string }[]> {
    return linesContaining(await this.logs(), needles);
  }
}
