/**
 * The full system for end-to-end tests, one per test namespace, on the control plane of
 * the integration run:
 * - the namespace, with runtimed's RBAC bound to its `default` ServiceAccount;
 * - a local node running the Runtime Pods (runtimed and the Runtime Servers) as real
 *   processes on 127.0.0.x;
 * - the controller-manager (with an internal CA: it keeps each Runtime's runtimed TLS
 *   Secret), the scheduler and, optionally, stale-recovery, in-process, each with a
 *   least-privilege ServiceAccount;
 * - the runtime-gateway as a real child process (`--resolve endpoints`, HTTPS with a
 *   serving certificate for 127.0.0.1/localhost from a test CA).
 * Every component logs to a file under one directory, so that a test can read them all
 * (`logs()`, e.g. to check that no token was ever logged). `stop()` leaves no process.
 */
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, INVOCATION_ID_HEADER, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Run, RunSpec, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { CONTROLLER_MANAGER_RULES, ControllerManager } from '@kruntimes/controller-manager-core';
import { GATEWAY_RBAC_RULES } from '@kruntimes/gateway-core';
import { groupAlive, signalGroup } from '@kruntimes/host';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the full system runs Runtime Pods as real processes through the local node agent (a tool)
import { LocalNode } from '@kruntimes/local-node';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { STALE_RECOVERY_RULES, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { Cluster, REPO_ROOT, freePorts, kubeConfigFor, kubeconfigYaml, survivingProcesses, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { call, testCa, testServerCert } from '@kruntimes/testing';
import type { HttpAnswer, TestCert } from '@kruntimes/testing';

export const WAIT = { timeoutMs: 90_000, intervalMs: 100 };
export const USERS = ['admin', 'alice', 'bob'] as const;
export type UserName = (typeof USERS)[number];

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export interface SystemOptions {
  /** Readable part of the namespace name. */
  prefix: string;
  cluster?: Cluster;
  /** Start stale-recovery in-process too (default false). */
  staleRecovery?: boolean;
  /** Start the gateway (default true). */
  gateway?: boolean;
  /** Extra environment of every runtimed container (an image ENV: the Pod's own env wins), e.g. short Lease durations. */
  podEnv?: Record<string, string>;
}

/** A component the system started and stops (stale-recovery, or whatever a test adds). */
export interface Stoppable {
  stop(): Promise<void>;
}

export interface GatewayProcess {
  pid: number;
  /** https://127.0.0.1:<port> */
  url: string;
  /** The CA that issued the gateway's serving certificate (what clients trust). */
  caPem: string;
  metricsUrl: string;
  port: number;
  metricsPort: number;
  logFile: string;
  certFile: string;
  keyFile: string;
  exited: Promise<number | null>;
}

export interface InvokeOptions {
  runtime: string;
  uid: string;
  /** Bearer token; omitted: no Authorization header at all. */
  token?: string;
  /** JSON text or raw bytes; default `{}`. */
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** `functions` (default) or the `runs` alias. */
  route?: 'functions' | 'runs';
  chunked?: boolean;
  method?: string;
}

export type RecordingLogger = Logger & { errors: { object: unknown; message: unknown }[] };

/** A ControllerLogger-compatible pino logger writing JSON lines to a file; what it logs at error level is also kept. */
function fileLogger(file: string, name: string): RecordingLogger {
  const errors: { object: unknown; message: unknown }[] = [];
  const logger = pino(
    {
      name,
      level: 'debug',
      redact: ['authorization', '*.authorization', 'token', '*.token', 'headers', '*.headers'],
      hooks: {
        logMethod(args, method, level) {
          if (level >= 50) errors.push({ object: args[0], message: args[1] });
          method.apply(this, args);
        },
      },
    },
    pino.destination({ dest: file, sync: true, mkdir: true }),
  );
  return Object.assign(logger, { errors });
}

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
  readonly scheduler: Scheduler;
  readonly staleRecovery: StaleRecovery | undefined;
  readonly gateway: GatewayProcess | undefined;
  /** In-process component loggers; `.errors` holds what each logged at error level. */
  readonly loggers: Record<string, RecordingLogger>;
  /** Every log file of every component lives under here. */
  readonly dir: string;
  readonly #extra: Stoppable[] = [];
  #stopped = false;

  private constructor(fields: {
    cluster: Cluster;
    namespace: TestNamespace;
    node: LocalNode;
    internalCa: CertificateAuthority;
    manager: ControllerManager;
    scheduler: Scheduler;
    staleRecovery: StaleRecovery | undefined;
    gateway: GatewayProcess | undefined;
    loggers: System['loggers'];
    dir: string;
  }) {
    this.cluster = fields.cluster;
    this.admin = fields.cluster.kubeConfig();
    this.core = this.admin.makeApiClient(CoreV1Api);
    this.objects = this.admin.makeApiClient(CustomObjectsApi);
    this.rbac = this.admin.makeApiClient(RbacAuthorizationV1Api);
    this.namespace = fields.namespace;
    this.node = fields.node;
    this.internalCa = fields.internalCa;
    this.manager = fields.manager;
    this.scheduler = fields.scheduler;
    this.staleRecovery = fields.staleRecovery;
    this.gateway = fields.gateway;
    this.loggers = fields.loggers;
    this.dir = fields.dir;
  }

  static async start(options: SystemOptions): Promise<System> {
    const cluster = options.cluster ?? Cluster.fromEnvironment();
    const admin = cluster.kubeConfig();
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const namespace = await cluster.createNamespace({ prefix: options.prefix, waitForDefaultServiceAccount: true });
    const ns = namespace.name;
    const dir = await mkdtemp(join(tmpdir(), `krt-system-${options.prefix}-`));
    const started: Stoppable[] = [];
    try {
      // runtimed runs as the namespace's default ServiceAccount (the workload's serviceAccountName).
      await rbac.createNamespacedRole({
        namespace: ns,
        body: { metadata: { name: 'runtimed' }, rules: RUNTIMED_ROLE_RULES.map((rule) => ({ ...rule })) },
      });
      await rbac.createNamespacedRoleBinding({
        namespace: ns,
        body: {
          metadata: { name: 'runtimed' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'runtimed' },
          subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: ns }],
        },
      });
      const node = process.execPath;
      const localNode = new LocalNode(
        admin,
        {
          nodeName: ns,
          stateDir: join(dir, 'node'),
          namespaces: [ns],
          images: {
            'kruntimes/runtimed': {
              entrypoint: [node, join(REPO_ROOT, 'apps/runtimed/src/main.ts')],
              ...(options.podEnv === undefined ? {} : { env: options.podEnv }),
            },
            'kruntimes/runtime-server-python': { entrypoint: [node, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')] },
            'kruntimes/runtime-server-bash': { entrypoint: [node, join(REPO_ROOT, 'apps/runtime-server-bash/src/main.ts')] },
          },
          crashLoopBackoff: { initialMs: 100, maxMs: 1_000 },
        },
        { deleteNodeOnStop: true, logger: fileLogger(join(dir, 'logs', 'local-node.log'), 'local-node') },
      );
      await localNode.start();
      started.push({ stop: () => localNode.stop({ graceMs: 3_000 }) });

      const managerLogger = fileLogger(join(dir, 'logs', 'controller-manager.log'), 'controller-manager');
      const schedulerLogger = fileLogger(join(dir, 'logs', 'scheduler.log'), 'scheduler');
      const loggers: System['loggers'] = { 'controller-manager': managerLogger, scheduler: schedulerLogger };
      const internalCa = await createCertificateAuthority({ commonName: `kruntimes internal CA ${ns}` });
      const manager = new ControllerManager({
        kubeConfig: await serviceAccountKubeConfig(cluster, ns, 'controller-manager', CONTROLLER_MANAGER_RULES),
        namespace: ns,
        logger: managerLogger,
        internalCa,
        workload: {
          runtimedImage: 'kruntimes/runtimed:dev',
          runtimeServerImages: { python: 'kruntimes/runtime-server-python:dev', bash: 'kruntimes/runtime-server-bash:dev' },
          serviceAccountName: 'default',
          runtimeServerListen: 'podIP',
          terminationGracePeriodSeconds: 3,
        },
      });
      await manager.start();
      started.push(manager);
      const scheduler = new Scheduler({
        kubeConfig: await serviceAccountKubeConfig(cluster, ns, 'scheduler', SCHEDULER_RULES),
        namespace: ns,
        logger: schedulerLogger,
      });
      await scheduler.start();
      started.push(scheduler);
      let staleRecovery: StaleRecovery | undefined;
      if (options.staleRecovery === true) {
        const recoveryLogger = fileLogger(join(dir, 'logs', 'stale-recovery.log'), 'stale-recovery');
        loggers['stale-recovery'] = recoveryLogger;
        staleRecovery = new StaleRecovery({
          kubeConfig: await serviceAccountKubeConfig(cluster, ns, 'stale-recovery', STALE_RECOVERY_RULES),
          namespace: ns,
          logger: recoveryLogger,
        });
        await staleRecovery.start();
        started.push(staleRecovery);
      }
      let gateway: GatewayProcess | undefined;
      if (options.gateway !== false) {
        gateway = await startGateway(cluster, ns, join(dir, 'gateway'), internalCa.certPem);
        const { pid, exited } = gateway;
        started.push({ stop: () => stopProcess(pid, exited) });
      }
      return new System({ cluster, namespace, node: localNode, internalCa, manager, scheduler, staleRecovery, gateway, loggers, dir });
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

  /** Stopped with the system, before the rest (e.g. a component a test started). */
  adopt(component: Stoppable): void {
    this.#extra.push(component);
  }

  /**
   * Stops everything (gateway, stale-recovery, scheduler, controller-manager, every Pod
   * process), checks that no process is left, removes the namespace and the log
   * directory (`keepLogs` leaves it and returns its path).
   */
  async stop(options: { keepLogs?: boolean } = {}): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    const problems: unknown[] = [];
    const attempt = async (what: () => Promise<unknown>): Promise<void> => {
      try {
        await what();
      } catch (error) {
        problems.push(error);
      }
    };
    for (const component of this.#extra.reverse()) await attempt(() => component.stop());
    if (this.gateway !== undefined) {
      const { pid, exited } = this.gateway;
      await attempt(() => stopProcess(pid, exited));
    }
    if (this.staleRecovery !== undefined) await attempt(() => this.staleRecovery?.stop() ?? Promise.resolve());
    await attempt(() => this.scheduler.stop());
    await attempt(() => this.manager.stop());
    const pids = this.node.pids();
    await attempt(() => this.node.stop({ graceMs: 3_000 }));
    const survivors = await survivingProcesses([...pids, ...(this.gateway === undefined ? [] : [this.gateway.pid])]);
    if (survivors.length > 0) problems.push(new Error(`processes left running after stop: ${survivors.join(', ')}`));
    await attempt(() => this.namespace.delete());
    if (options.keepLogs !== true) await attempt(() => rm(this.dir, { recursive: true, force: true }));
    if (problems.length > 0) throw new AggregateError(problems, 'the system did not stop cleanly');
  }

  // ---- users and tokens ----

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
    const entries = await readdir(join(this.dir, 'node'), { withFileTypes: true, recursive: true }).catch(() => []);
    const projected = await Promise.all(
      entries
        .filter((entry) => entry.isFile() && entry.name === 'token')
        .map((entry) => readFile(join(entry.parentPath, entry.name), 'utf8').catch(() => '')),
    );
    return [
      ...USERS.map((user) => this.token(user)),
      ...serviceAccountTokens,
      ...projected.map((token) => token.trim()).filter((token) => token.length > 0),
    ];
  }

  /** Lets `user` get Runs in this namespace (all, or only `runName`): what invoking needs. */
  async grantGetRuns(user: UserName, runName?: string): Promise<void> {
    const name = `get-runs-${user}-${runName ?? 'all'}`;
    await this.rbac.createNamespacedRole({
      namespace: this.name,
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: [API_GROUP],
            resources: [RUN_PLURAL],
            verbs: ['get'],
            ...(runName === undefined ? {} : { resourceNames: [runName] }),
          },
        ],
      },
    });
    await this.rbac.createNamespacedRoleBinding({
      namespace: this.name,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
  }

  /** A ServiceAccount of this namespace with exactly `rules`, as a token. */
  async serviceAccountToken(name: string, rules: readonly Rule[]): Promise<string> {
    return serviceAccountToken(this.cluster, this.name, name, rules);
  }

  // ---- Runtimes and Runs ----

  async createRuntime(name: string, spec: Partial<RuntimeSpec> & Pick<RuntimeSpec, 'language'>): Promise<Runtime> {
    const body: Runtime = { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: 'Runtime', metadata: { name }, spec: { ...spec } };
    return (await this.objects.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUNTIME_PLURAL,
      body,
    })) as Runtime;
  }

  /** Resolves once `count` Pods of the Runtime are Ready (runtimed serving). */
  async waitRuntimeReady(runtime: string, count = 1): Promise<V1Pod[]> {
    return this.#explained(
      waitFor(
        `${count} ready Pods of Runtime ${runtime}`,
        async () => {
          const pods = (await this.core.listNamespacedPod({ namespace: this.name, labelSelector: podLabelSelector(runtime) })).items;
          const ready = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
          return ready.length >= count ? ready : undefined;
        },
        WAIT,
      ),
    );
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

  /** A function Run; `handler` like `main:handle` (Python) or `handle` (Bash). */
  async createFunctionRun(name: string, runtime: string, source: string, handler: string, spec: Partial<RunSpec> = {}): Promise<Run> {
    const body: Run = {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'Run',
      metadata: { name },
      spec: { runtime, source: { inline: source }, mode: { function: { handler } }, ...spec },
    };
    return (await this.objects.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      body,
    })) as Run;
  }

  async getRun(name: string): Promise<Run> {
    return (await this.objects.getNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      name,
    })) as Run;
  }

  async waitForRun(name: string, what: string, predicate: (run: Run) => boolean, timeoutMs = WAIT.timeoutMs): Promise<Run> {
    return waitFor(
      `Run ${name}: ${what}`,
      async () => {
        const run = await this.getRun(name);
        return predicate(run) ? run : undefined;
      },
      { timeoutMs, intervalMs: WAIT.intervalMs },
    );
  }

  /** Resolves with the Run once it is Ready (phase Ready); fails at once when it ends instead. */
  async waitReady(name: string): Promise<Run> {
    const ended = new AbortController();
    return this.#explained(
      waitFor(
        `Run ${name}: Ready`,
        async () => {
          const run = await this.getRun(name);
          const phase = run.status?.phase;
          if (phase === 'Failed' || phase === 'Cancelled' || phase === 'Succeeded' || phase === 'Interrupted') {
            ended.abort(
              new Error(`Run ${name} ended ${phase} (${run.status?.reason ?? ''}: ${run.status?.message ?? ''}) instead of becoming Ready`),
            );
          }
          return phase === 'Ready' ? run : undefined;
        },
        { ...WAIT, signal: ended.signal },
      ).catch((error: unknown) => {
        throw ended.signal.aborted ? (ended.signal.reason as Error) : error;
      }),
    );
  }

  /** The Pod a Run is assigned to (its runtimed is the owner). */
  async assignedPod(runName: string): Promise<V1Pod> {
    const pod = (await this.getRun(runName)).status?.assignedPod;
    if (pod === undefined) throw new Error(`Run ${runName} is not assigned to a Pod`);
    return this.core.readNamespacedPod({ namespace: this.name, name: pod });
  }

  async deleteRun(name: string): Promise<void> {
    try {
      await this.objects.deleteNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: this.name,
        plural: RUN_PLURAL,
        name,
      });
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    }
  }

  // ---- the dataplane ----

  /** The gateway URL of a Run's invoke path. */
  invokeUrl(runtime: string, uid: string, route: 'functions' | 'runs' = 'functions'): string {
    return `${this.#gateway().url}/v1/namespaces/${this.name}/runtimes/${runtime}/${route}/${uid}:invoke`;
  }

  /** One invoke through the gateway: status, headers, the JSON body (when it is JSON). */
  async invoke(options: InvokeOptions): Promise<HttpAnswer> {
    const gateway = this.#gateway();
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    return call(this.invokeUrl(options.runtime, options.uid, options.route), {
      ca: gateway.caPem,
      headers,
      body: options.body ?? '{}',
      ...(options.chunked === undefined ? {} : { chunked: options.chunked }),
      ...(options.method === undefined ? {} : { method: options.method }),
    });
  }

  /**
   * Replaces the gateway's serving certificate files (same CA, same names) and returns the
   * new certificate's SHA-256 fingerprint; the gateway picks it up within its reload interval.
   */
  async rotateGatewayCertificate(): Promise<string> {
    const gateway = this.#gateway();
    const next = await testServerCert(gatewayCaOf(gateway), { dns: ['localhost'], ips: ['127.0.0.1'] });
    // Key first: until the cert follows, the pair does not match and the gateway keeps the old one.
    await writeFile(gateway.keyFile, next.keyPem, { mode: 0o600 });
    await writeFile(gateway.certFile, next.certPem);
    return new X509Certificate(next.certPem).fingerprint256;
  }

  #gateway(): GatewayProcess {
    if (this.gateway === undefined) throw new Error('this system was started without the gateway');
    return this.gateway;
  }

  /** What a failed wait needs to be understood: every Run, every Pod, and the tail of every log. */
  async diagnose(tailLines = 15): Promise<string> {
    const out: string[] = [];
    const runs = (
      (await this.objects.listNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: this.name,
        plural: RUN_PLURAL,
      })) as { items: Run[] }
    ).items;
    for (const run of runs) {
      out.push(
        `Run ${run.metadata.name ?? ''}: ${run.status?.phase ?? 'Pending'} ${run.status?.reason ?? ''} ${run.status?.message ?? ''} pod=${run.status?.assignedPod ?? ''}`,
      );
    }
    for (const pod of (await this.core.listNamespacedPod({ namespace: this.name })).items) {
      const containers = (pod.status?.containerStatuses ?? []).map(
        (c) =>
          `${c.name}:${c.ready ? 'ready' : 'not-ready'}:${Object.keys(c.state ?? {}).join('')}${c.state?.waiting?.reason === undefined ? '' : `(${c.state.waiting.reason} ${c.state.waiting.message ?? ''})`}:restarts=${c.restartCount}`,
      );
      out.push(`Pod ${pod.metadata?.name ?? ''}: ${pod.status?.phase ?? ''} ip=${pod.status?.podIP ?? ''} ${containers.join(' ')}`);
    }
    for (const { file, text } of await this.logs()) {
      out.push(`--- ${file.slice(this.dir.length + 1)}`, ...text.trimEnd().split('\n').slice(-tailLines));
    }
    return out.join('\n');
  }

  // ---- logs ----

  /** Every log file of every component (gateway, in-process components, each Pod container): path and text. */
  async logs(): Promise<{ file: string; text: string }[]> {
    const files = await logFiles(this.dir);
    return Promise.all(files.map(async (file) => ({ file, text: await readFile(file, 'utf8') })));
  }

  /** The log lines (of any component) that contain any of `needles`. */
  async logLinesContaining(needles: readonly string[]): Promise<{ file: string; line: string }[]> {
    const found: { file: string; line: string }[] = [];
    for (const { file, text } of await this.logs()) {
      for (const line of text.split('\n')) {
        if (needles.some((needle) => needle !== '' && line.includes(needle))) found.push({ file, line });
      }
    }
    return found;
  }
}

async function logFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile() && entry.name.endsWith('.log')).map((entry) => join(entry.parentPath, entry.name));
}

/** Tokens of ServiceAccounts made by this module (they must never be logged either). */
const serviceAccountTokens: string[] = [];

async function serviceAccountToken(cluster: Cluster, namespace: string, name: string, rules: readonly Rule[]): Promise<string> {
  const admin = cluster.kubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules: rules.map((rule) => ({ ...rule })) } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  const token =
    (await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds: 3600 } } })).status
      ?.token ?? '';
  serviceAccountTokens.push(token);
  return token;
}

async function serviceAccountKubeConfig(cluster: Cluster, namespace: string, name: string, rules: readonly Rule[]): Promise<KubeConfig> {
  const token = await serviceAccountToken(cluster, namespace, name, rules);
  return kubeConfigFor({ server: cluster.info.server, caPem: cluster.info.caPem, user: `${namespace}-${name}`, token });
}

const gatewayCas = new WeakMap<GatewayProcess, TestCert>();

function gatewayCaOf(gateway: GatewayProcess): TestCert {
  const ca = gatewayCas.get(gateway);
  if (ca === undefined) throw new Error('unknown gateway');
  return ca;
}

/**
 * The real runtime-gateway (`node apps/runtime-gateway/src/main.ts`) in its own process
 * group, output to `gateway.log`; resolves once it answers HTTPS.
 */
async function startGateway(cluster: Cluster, namespace: string, dir: string, internalCaPem: string): Promise<GatewayProcess> {
  await mkdir(dir, { recursive: true });
  const ca = await testCa(`gateway-ca-${namespace}`);
  const serving = await testServerCert(ca, { dns: ['localhost'], ips: ['127.0.0.1'] });
  const files = {
    cert: join(dir, 'tls.crt'),
    key: join(dir, 'tls.key'),
    internalCa: join(dir, 'runtimed-ca.crt'),
    kubeconfig: join(dir, 'gateway.kubeconfig'),
    log: join(dir, 'gateway.log'),
  };
  await writeFile(files.cert, serving.certPem);
  await writeFile(files.key, serving.keyPem, { mode: 0o600 });
  await writeFile(files.internalCa, internalCaPem);
  const token = await serviceAccountToken(cluster, namespace, 'runtime-gateway', GATEWAY_RBAC_RULES);
  await writeFile(
    files.kubeconfig,
    kubeconfigYaml({ server: cluster.info.server, caPem: cluster.info.caPem, user: `${namespace}-runtime-gateway`, token }),
    { mode: 0o600 },
  );
  const [port = 0, metricsPort = 0] = await freePorts(2);
  const log = openSync(files.log, 'a');
  let child;
  try {
    child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'apps/runtime-gateway/src/main.ts'),
        '--listen',
        `127.0.0.1:${port}`,
        '--tls-cert-file',
        files.cert,
        '--tls-key-file',
        files.key,
        '--runtimed-ca-file',
        files.internalCa,
        '--resolve',
        'endpoints',
        '--namespace',
        namespace,
        '--kubeconfig',
        files.kubeconfig,
        '--metrics-address',
        `127.0.0.1:${metricsPort}`,
        '--drain-seconds',
        '15',
        '--log-level',
        'debug',
      ],
      { detached: true, stdio: ['ignore', log, log], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' } },
    );
  } finally {
    closeSync(log);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error('cannot start the runtime-gateway');
  child.on('error', () => undefined);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      resolve(code);
    });
  });
  child.unref();
  const gateway: GatewayProcess = {
    pid,
    url: `https://127.0.0.1:${port}`,
    caPem: ca.certPem,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    port,
    metricsPort,
    logFile: files.log,
    certFile: files.cert,
    keyFile: files.key,
    exited,
  };
  gatewayCas.set(gateway, ca);
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
  });
  try {
    await waitFor(
      'the runtime-gateway answering HTTPS',
      async () => {
        if (exitCode !== undefined)
          throw new Error(`the runtime-gateway exited (${String(exitCode)}):\n${await readFile(files.log, 'utf8')}`);
        try {
          const answer = await call(`${gateway.url}/healthz-probe`, { ca: ca.certPem, method: 'GET' });
          return answer.status === 404 ? true : undefined;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  } catch (error) {
    await stopProcess(pid, exited);
    throw error;
  }
  return gateway;
}

/** SIGTERM to the process group, SIGKILL after a bound; resolves once it exited. */
async function stopProcess(pid: number, exited: Promise<unknown>): Promise<void> {
  if (!groupAlive(pid)) return;
  signalGroup(pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => {
        resolve(true);
      }, 8_000);
    }),
  ]);
  clearTimeout(timer);
  if (killed) {
    signalGroup(pid, 'SIGKILL');
    await exited;
  }
}

export { INVOCATION_ID_HEADER };
export type { HttpAnswer };
