// `dev up`: the whole local system in the foreground (see DEV_USAGE and the README), one named step after another.
import { appendFile, chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ControlPlane, REPO_ROOT, freePorts, kubeconfigYaml, testCa, testServerCert } from '@kruntimes/testing';
import type { ClusterInfo, ObjectStore } from '@kruntimes/testing';
import { DEMO_ARTIFACT_RUN, artifactDemoResult, createArtifactDemo, startObjectStore } from './dev-artifacts.ts';
import { CONTROL_PLANE_BINARIES, binariesWithProgress, formatElapsed, laterBinaries } from './dev-binaries.ts';
import { DevError, STOP_GRACE_MS, StopRequested, spawnComponent, spawnProgram, teardown, waitUntil } from './dev-components.ts';
import { PART_COMPONENTS, failureDetail, failureReason, partFailedLine } from './dev-parts.ts';
import type { PartName } from './dev-parts.ts';
import type { Running, Say } from './dev-components.ts';
import { DEMO, DEMO_INVOKER, DEMO_NAMESPACE, createDemoObjects, dashboardTraffic, invokeDemo, prepareDemoInvoker } from './dev-demo.ts';
import type { DemoInvoker } from './dev-demo.ts';
import { httpsStatus } from './dev-https.ts';
import { checkDashboards, startPrometheus, waitForScrapes } from './dev-metrics.ts';
import { checkTraces, planJaeger, startJaeger } from './dev-traces.ts';
import type { DevJaeger, JaegerPlan } from './dev-traces.ts';
import type { DevPrometheus } from './dev-metrics.ts';
import { IMAGES, NODE_NAME, nodeAgentConfig } from './dev-node-agent.ts';
import { missingPrerequisites } from './dev-prerequisites.ts';
import { ServiceRestarts, describeExit } from './dev-restart.ts';
import { environmentProcesses, formatSocket, listeningSocketsOf, terminate } from './dev-processes.ts';
import {
  PROMETHEUS_SERVICE_ACCOUNT,
  RUNTIMED_SERVICE_ACCOUNT,
  SYSTEM_NAMESPACE,
  installServiceRbac,
  serviceAccountToken,
} from './dev-rbac.ts';
import type { ServiceName } from './dev-rbac.ts';
import type { ScrapedService } from './dev-prometheus.ts';
import { readState, stateFile, writeState } from './dev-state.ts';
import type { DevState } from './dev-state.ts';
import { ensureInternalCa } from './internal-ca.ts';

/** The line a supervisor (or a test) waits for: everything is up and the demo answered. */
export const READY_LINE = 'ready: the local cluster keeps running';
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const START_TIMEOUT_MS = 60_000;
/** Valid for 30 days: a dev cluster may stay up for a while. */
const GATEWAY_CERT_DAYS = 30;

export interface UpOptions {
  dir: string;
  /** The dir is not the default one: printed commands need --dir. */
  dirFlag: boolean;
  once: boolean;
  /** Start Prometheus and check the dashboards' queries after the demo. */
  prometheus: boolean;
  /** Start Jaeger, export the invoke path's spans to it and check a trace after the demo. */
  jaeger: boolean;
  out: (line: string) => void;
}

/** What attached once the binaries built beside the demo existed; undefined: not asked for, or failed. */
interface Attached {
  objectStore: ObjectStore | undefined;
  prometheus: DevPrometheus | undefined;
  jaeger: DevJaeger | undefined;
}

/** The gateway's serving certificate and ports, known before anything that names them starts. */
interface GatewayPlan {
  url: string;
  port: number;
  metricsPort: number;
  caPem: string;
  files: { ca: string; cert: string; key: string };
}

/**
 * Whether the Runtime Pods wall their Runs (PerRunUser): the local node maps a Pod's user
 * namespace only as root. Otherwise they run as the agent's own user (SharedUser).
 */
export function runtimeUserNamespaces(): boolean {
  return process.getuid?.() === 0;
}

/** Returns the exit code: 0 after a requested stop (or --once), 1 when something failed. */
export async function up(options: UpOptions): Promise<number> {
  const t0 = performance.now();
  const say: Say = (line) => {
    options.out(`[dev ${formatElapsed(performance.now() - t0).padStart(5)}] ${line}`);
  };
  if (!(await clearEarlierRun(options.dir, say))) return 1;
  await mkdir(join(options.dir, 'logs'), { recursive: true, mode: 0o700 });
  // Kubeconfigs, CA keys and the object store's keys live here, each 0600 or in a 0700
  // directory, whatever the umask made it. Walled Pods' processes (other uids) pass through
  // to their directories under node/ but list nothing; otherwise nobody else's.
  await chmod(options.dir, runtimeUserNamespaces() ? 0o711 : 0o700);
  // Register before starting: a signal during the start must still stop what was started.
  const stop = stopOnSignals(say);
  const session = new DevSession(options, say, stop.signal);
  let code: number;
  try {
    await writeState(session.state);
    code = await session.run();
  } catch (error) {
    code = error instanceof StopRequested || stop.signal.aborted ? 0 : 1;
    if (code === 1)
      say(`failed: ${error instanceof DevError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    if (!(await session.tearDown())) code = 1;
    stop.dispose();
  }
  return code;
}

/** False when another supervisor runs in `dir`; processes a killed one left behind are stopped. */
async function clearEarlierRun(dir: string, say: Say): Promise<boolean> {
  const previous = await readState(dir);
  if (previous === undefined || previous.supervisorPid === process.pid) return true;
  const alive = await environmentProcesses(dir, [previous.supervisorPid]);
  if (alive.includes(previous.supervisorPid)) {
    say(`already running (pid ${String(previous.supervisorPid)}); \`krt dev down\` stops it`);
    return false;
  }
  if (alive.length > 0) {
    say(`stopping ${String(alive.length)} leftover processes of an earlier run`);
    await terminate(alive, STOP_GRACE_MS);
  }
  return true;
}

/** The first of SIGINT, SIGTERM, SIGHUP aborts `signal`; until `dispose`, Node keeps running (the components are unref'd). */
function stopOnSignals(say: Say): { signal: AbortSignal; dispose: () => void } {
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stop.signal.aborted) return;
    say(`${signal}: stopping everything`);
    stop.abort(new StopRequested(signal));
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const dispose = (): void => {
    clearInterval(keepAlive);
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  };
  return { signal: stop.signal, dispose };
}

/** One `dev up`: what it started (for the teardown) and the state file other terminals read. */
class DevSession {
  readonly state: DevState;
  readonly #options: UpOptions;
  readonly #say: Say;
  readonly #signal: AbortSignal;
  readonly #running: Running[] = [];
  #controlPlane: ControlPlane | undefined;
  /** Where the pinned binaries are, kubectl among them. */
  #binDir: string | undefined;
  #objectStore: ObjectStore | undefined;
  /** Ends the build beside the demo and what attaches after it (a stop, or a failure elsewhere). */
  readonly #later = new AbortController();
  /** The attaching of what was built beside the demo, while it may still start components. */
  #attaching: Promise<unknown> | undefined;
  /** The components not built yet while the build beside the demo runs. */
  #laterPending: string[] | undefined;
  /** The services, restarted when they exit as their Deployments would. */
  readonly #restarts: ServiceRestarts;
  /** The parts beside the demo that failed: said, kept in the state, and --once's exit code. */
  readonly #failed = new Set<PartName>();
  /** Set first by the teardown: the exits it causes are no part's failure. */
  #tearingDown = false;

  constructor(options: UpOptions, say: Say, signal: AbortSignal) {
    this.#options = options;
    this.#say = say;
    this.#signal = signal;
    this.state = { supervisorPid: process.pid, dir: options.dir, phase: 'starting', startedAt: new Date().toISOString(), components: {} };
    this.#restarts = new ServiceRestarts(say, (old, fresh) => this.#replace(old, fresh));
  }

  /**
   * Every step in order; resolves with the exit code once the environment stops (at once
   * with --once). The demo's functions need only the control plane: the other binaries
   * build beside them, and the object store, Jaeger and Prometheus attach once built.
   */
  async run(): Promise<number> {
    const controlPlane = await this.#startControlPlane();
    const later = this.#buildLater();
    const admin = controlPlane.cluster.kubeConfig();
    const kubeconfigOf = await this.#installServiceAccess(controlPlane, admin);
    const internalCaDir = join(this.#options.dir, 'internal-ca');
    await ensureInternalCa(internalCaDir);
    const gateway = await this.#planGateway();
    // Its ports now: the services and Pods export to it from their start, whenever it starts.
    const jaegerPlan = this.#options.jaeger ? await planJaeger() : undefined;
    if (jaegerPlan !== undefined) this.state.jaegerOtlpEndpoint = jaegerPlan.otlpEndpoint;
    this.#checkStop();
    await this.#startNodeAgent(gateway, controlPlane.info.kubeletServer);
    const scraped = await this.#startServices(gateway, internalCaDir, kubeconfigOf, jaegerPlan?.otlpEndpoint);
    const invoker = await this.#prepareDemo(controlPlane, admin);
    const attaching = this.#attach(later, admin, scraped, kubeconfigOf, jaegerPlan);
    this.#attaching = attaching.catch(() => undefined); // awaited below, or by the teardown
    const check = (): void => {
      this.#throwIfOneExited();
    };
    const results = await invokeDemo(admin, invoker, this.#signal, check);
    this.#say(
      `invoked through ${gateway.url} as ServiceAccount ${DEMO_NAMESPACE}/${DEMO_INVOKER} (it may only get Runs in ${DEMO_NAMESPACE}):`,
    );
    for (const line of results) this.#options.out(line);
    if (this.#laterPending !== undefined) {
      this.#say(
        `the demo functions answer; ${this.#laterPending.join(', ')} still building beside them, attached when built. Meanwhile: eval "$(npx krt dev env${this.#options.dirFlag ? ` --dir ${this.#options.dir}` : ''})"; npx krt invoke hello-py -n ${DEMO_NAMESPACE} --data '{"name":"you"}'`,
      );
    }
    const { objectStore, prometheus, jaeger } = await attaching;
    await this.#checkParts({ objectStore, prometheus, jaeger }, admin, invoker, scraped.length, check);
    await this.#announceReady(invoker);
    if (this.#options.once) {
      if (this.#failed.size > 0) {
        this.#say(`--once: failed beside the demo: ${[...this.#failed].join(', ')} (see above); tearing everything down`);
        return 1;
      }
      this.#say('--once: tearing everything down');
      return 0;
    }
    return this.#runUntilStopped(controlPlane);
  }

  /** The binaries the demo's functions do not need, built (at a lower priority) while they start. */
  #buildLater(): Promise<string> {
    const components = laterBinaries(this.#options);
    this.#laterPending = components;
    const signal = AbortSignal.any([this.#signal, this.#later.signal]);
    const build = binariesWithProgress(this.#say, { components, label: 'building beside the demo', background: true, signal });
    const done = build.finally(() => {
      this.#laterPending = undefined;
    });
    done.catch(() => undefined); // awaited by #attach
    return done;
  }

  /**
   * Once built: the object store and the artifact task, Jaeger and Prometheus; each said as
   * it attaches. Runs beside the demo's invocations. A part that fails is said and left out:
   * the demo and the other parts go on.
   */
  async #attach(
    later: Promise<string>,
    admin: KubeConfig,
    scraped: ScrapedService[],
    kubeconfigOf: (service: typeof PROMETHEUS_SERVICE_ACCOUNT) => Promise<string>,
    jaegerPlan: JaegerPlan | undefined,
  ): Promise<Attached> {
    const none: Attached = { objectStore: undefined, prometheus: undefined, jaeger: undefined };
    const binDir = await later.catch(async (error: unknown) => {
      this.#checkStop();
      const cause = new DevError(`building beside the demo failed: ${failureReason(error)}`);
      for (const part of this.#partsAsked()) await this.#partFailed(part, cause);
      return undefined;
    });
    if (binDir === undefined) return none;
    this.#checkStop();
    const objectStore = await this.#part('object-store', () => this.#startArtifactDemo(binDir, admin));
    const jaeger = jaegerPlan === undefined ? undefined : await this.#part('jaeger', () => this.#startJaeger(jaegerPlan));
    this.#checkStop();
    const prometheus = this.#options.prometheus
      ? await this.#part('prometheus', () => this.#startPrometheus(scraped, kubeconfigOf))
      : undefined;
    return { objectStore, prometheus, jaeger };
  }

  #partsAsked(): PartName[] {
    return [
      'object-store',
      ...(this.#options.jaeger ? (['jaeger'] as const) : []),
      ...(this.#options.prometheus ? (['prometheus'] as const) : []),
    ];
  }

  /** The object store (SeaweedFS) and the task Run that writes an artifact to it. */
  async #startArtifactDemo(binDir: string, admin: KubeConfig): Promise<ObjectStore> {
    const objectStore = await startObjectStore(this.#options.dir, binDir, this.#say);
    this.#objectStore = objectStore;
    this.state.objectStoreEndpoint = objectStore.endpoint;
    this.#checkStop();
    await createArtifactDemo(admin, objectStore);
    this.#say(`task Run ${DEMO_ARTIFACT_RUN} created: it writes an artifact to the object store`);
    return objectStore;
  }

  /**
   * After the demo answered, each attached part's check: the artifact task's result, the
   * dashboards' queries (their traffic also feeds the traces), the traces.
   */
  async #checkParts(attached: Attached, admin: KubeConfig, invoker: DemoInvoker, services: number, check: () => void): Promise<void> {
    const { objectStore, prometheus, jaeger } = attached;
    if (objectStore !== undefined)
      await this.#part('object-store', async () => {
        this.#options.out(await artifactDemoResult(admin, this.#signal, check));
      });
    const traffic =
      prometheus !== undefined &&
      (await this.#part('prometheus', () => this.#checkDashboards(prometheus, services, admin, invoker, check)));
    // Jaeger may have started after the demo's invocations: one more of each to trace.
    if (traffic !== true && jaeger !== undefined) await invokeDemo(admin, invoker, this.#signal, check);
    if (jaeger !== undefined)
      await this.#part('jaeger', async () => {
        const traces = await checkTraces(jaeger.queryUrl, this.#signal);
        this.#options.out(traces.line);
        if (!traces.ok) throw new DevError('no invocation trace crossed the gateway, runtimed and a Runtime Server (see the traces line)');
      });
  }

  /**
   * `step` of a part beside the demo; its failure is said, recorded and resolves undefined.
   * A stop, or a component the demo needs having exited, is no part's failure: it propagates.
   */
  async #part<T>(part: PartName, step: () => Promise<T>): Promise<T | undefined> {
    try {
      return await step();
    } catch (error) {
      this.#checkStop();
      this.#throwIfOneExited();
      await this.#partFailed(part, error);
      return undefined;
    }
  }

  /** One line with the cause and the log (which gets the whole error); the state says it for `dev status`. */
  async #partFailed(part: PartName, error: unknown): Promise<void> {
    if (this.#tearingDown || this.#failed.has(part)) return;
    this.#failed.add(part);
    const log = join(this.#options.dir, 'logs', `${part}.log`);
    await appendFile(log, `[dev] ${part} failed: ${failureDetail(error)}\n`).catch(() => undefined);
    const failure = { reason: failureReason(error), log };
    this.#say(partFailedLine(part, failure));
    this.state.failed = { ...this.state.failed, [part]: failure };
    await writeState(this.state);
  }

  async tearDown(): Promise<boolean> {
    // First: the teardown's own stops restart nothing, and fail no part.
    this.#tearingDown = true;
    this.#restarts.stop();
    this.state.phase = 'stopping';
    await writeState(this.state).catch(() => undefined);
    // Nothing starts once the teardown counts what runs.
    this.#later.abort(new StopRequested('teardown'));
    await this.#attaching;
    // Before the rest: nothing uploads once the Pods are gone, and its data is a throwaway.
    await this.#objectStore?.stop().catch((error: unknown) => {
      this.#say(`stopping the object store failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    return teardown(this.#options.dir, this.#running, this.#controlPlane, this.state, this.#say);
  }

  #checkStop(): void {
    if (this.#signal.aborted) throw this.#signal.reason as Error;
    if (this.#later.signal.aborted) throw this.#later.signal.reason as Error;
  }

  #throwIfOneExited(): void {
    if (this.#restarts.failure !== undefined) throw new DevError(this.#restarts.failure);
    // A part's component exiting fails only its part (#part, #watchParts).
    const dead = this.#running.find(
      (component) => component.exitCode !== undefined && !this.#restarts.restarts(component.name) && !PART_COMPONENTS.has(component.name),
    );
    if (dead !== undefined) throw new Error(`${dead.name} exited (${String(dead.exitCode)}); see ${dead.log}`);
  }

  /** The prerequisites, the control-plane binaries (built once), then etcd, kube-apiserver and kube-controller-manager. */
  async #startControlPlane(): Promise<ControlPlane> {
    const { dir } = this.#options;
    const missing = await missingPrerequisites();
    if (missing.length > 0) throw new DevError(`missing on the PATH: ${missing.join('; ')}`);
    const binDir = await binariesWithProgress(this.#say, {
      components: CONTROL_PLANE_BINARIES,
      label: 'building the control plane',
      signal: this.#signal,
    });
    this.#binDir = binDir;
    this.#checkStop();
    this.#say('starting etcd, kube-apiserver and kube-controller-manager on loopback');
    const crdDirectories = [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')];
    const controlPlane = await ControlPlane.start({ binDir, tmpRoot: dir, crdDirectories, log: this.#say });
    this.#controlPlane = controlPlane;
    const kubeconfigs = await controlPlane.cluster.writeKubeconfigs(dir);
    const kubeconfig = kubeconfigs.admin ?? join(dir, 'admin.kubeconfig');
    Object.assign(this.state, { controlPlaneDir: controlPlane.info.dir, apiServer: controlPlane.server, kubeconfig });
    await writeState(this.state);
    this.#checkStop();
    return controlPlane;
  }

  /** The services' RBAC; returns how to write a service's kubeconfig (a token of its own ServiceAccount). */
  async #installServiceAccess(
    controlPlane: ControlPlane,
    admin: KubeConfig,
  ): Promise<(service: ServiceName | typeof PROMETHEUS_SERVICE_ACCOUNT) => Promise<string>> {
    await installServiceRbac(admin);
    this.#say(`CRDs and RBAC installed (a ServiceAccount per service in ${SYSTEM_NAMESPACE}, bound to its rules from the code)`);
    return async (service) => {
      const token = await serviceAccountToken(admin, SYSTEM_NAMESPACE, service);
      const path = join(this.#options.dir, `${service}.kubeconfig`);
      const { server } = controlPlane;
      const yaml = kubeconfigYaml({ server, caPem: controlPlane.cluster.info.caPem, user: `${SYSTEM_NAMESPACE}:${service}`, token });
      await writeFile(path, yaml, { mode: 0o600 });
      return path;
    };
  }

  /** The gateway's serving CA and certificate under `<dir>/gateway`, and its two ports. */
  async #planGateway(): Promise<GatewayPlan> {
    const gatewayDir = join(this.#options.dir, 'gateway');
    // runtimed (a walled Pod's uid) reads the CA certificate; the key stays 0600.
    await mkdir(gatewayDir, { recursive: true, mode: 0o711 });
    await chmod(gatewayDir, 0o711);
    const ca = await testCa('kruntimes local gateway CA', { validityDays: GATEWAY_CERT_DAYS });
    const serving = await testServerCert(ca, { dns: ['localhost'], ips: ['127.0.0.1'] }, { validityDays: GATEWAY_CERT_DAYS });
    const files = { ca: join(gatewayDir, 'ca.crt'), cert: join(gatewayDir, 'tls.crt'), key: join(gatewayDir, 'tls.key') };
    await writeFile(files.ca, ca.certPem, { mode: 0o644 });
    await writeFile(files.cert, serving.certPem, { mode: 0o644 });
    await writeFile(files.key, serving.keyPem, { mode: 0o600 });
    const [port = 0, metricsPort = 0] = await freePorts(2);
    const url = `https://127.0.0.1:${String(port)}`;
    Object.assign(this.state, { gatewayUrl: url, gatewayCaFile: files.ca });
    return { url, port, metricsPort, caPem: ca.certPem, files };
  }

  async #start(name: string, script: string, args: string[], env: Record<string, string> = {}): Promise<Running> {
    return this.#supervise(spawnComponent(this.#options.dir, name, script, args, env));
  }

  /** Jaeger on loopback, on the OTLP port the services and Pods already export to. */
  async #startJaeger(plan: JaegerPlan): Promise<DevJaeger> {
    const binDir = this.#binDir;
    if (binDir === undefined) throw new Error('the binaries were not built');
    const jaeger = await startJaeger({
      binDir,
      plan,
      signal: AbortSignal.any([this.#signal, this.#later.signal]),
      say: this.#say,
      start: (name, program, args, env) => this.#supervise(spawnProgram(this.#options.dir, name, program, args, env)),
      discard: (component) => this.#discard(component),
    });
    this.state.jaegerUrl = jaeger.queryUrl;
    await writeState(this.state);
    this.#say(`jaeger (${jaeger.queryUrl}) receiving the invoke path's spans over OTLP (${jaeger.otlpEndpoint})`);
    return jaeger;
  }

  /** A start of a part's component that failed: stopped (if it still runs) and no longer supervised. */
  async #discard(component: Running): Promise<void> {
    await terminate([component.pid], STOP_GRACE_MS);
    const index = this.#running.indexOf(component);
    if (index >= 0) this.#running.splice(index, 1);
    this.state.components = Object.fromEntries(
      Object.entries(this.state.components).filter(([, recorded]) => recorded.pid !== component.pid),
    );
    await writeState(this.state);
  }

  /** A service (what the chart runs as a Deployment): restarted when it exits, with the same arguments and log. */
  async #startService(name: string, script: string, args: string[], env: Record<string, string> = {}): Promise<Running> {
    const component = await this.#start(name, script, args, env);
    this.#restarts.watch(component, () => spawnComponent(this.#options.dir, name, script, args, env));
    return component;
  }

  /** A restarted service in place of the one that exited: the teardown stops it in the same order. */
  async #replace(old: Running, fresh: Running): Promise<void> {
    const index = this.#running.indexOf(old);
    if (index >= 0) this.#running[index] = fresh;
    else this.#running.push(fresh);
    this.state.components[fresh.name] = { pid: fresh.pid, log: fresh.log };
    await writeState(this.state);
  }

  async #supervise(component: Running): Promise<Running> {
    this.#running.push(component);
    this.state.components[component.name] = { pid: component.pid, log: component.log };
    await writeState(this.state);
    return component;
  }

  /**
   * The node agent plays the kubelet: it runs as admin, as a kubelet has node-wide rights,
   * and serves the kubelet's log endpoint on its InternalIP for `kubectl logs`.
   */
  async #startNodeAgent(gateway: GatewayPlan, kubeletServer: ClusterInfo['kubeletServer']): Promise<void> {
    const { dir } = this.#options;
    const nodeDir = join(dir, 'node');
    const nodeConfig = join(dir, 'local-node.json');
    await writeFile(nodeConfig, JSON.stringify(nodeAgentConfig(nodeDir, gateway.port, gateway.files.ca, kubeletServer), null, 2));
    this.state.nodeDir = nodeDir;
    const adminKubeconfig = this.state.kubeconfig ?? join(dir, 'admin.kubeconfig');
    const node = await this.#start('local-node', 'tools/local-node/src/main.ts', ['--config', nodeConfig, '--kubeconfig', adminKubeconfig]);
    await waitUntil('the local node agent', this.#signal, START_TIMEOUT_MS, async () => {
      if (node.exitCode !== undefined) throw new Error(`the local node agent exited (${String(node.exitCode)}); see ${node.log}`);
      return /^ready /m.test(await readFile(node.log, 'utf8').catch(() => ''));
    });
    this.#say(`local node agent ${NODE_NAME} running (Runtime Pods as processes on 127.0.0.x)`);
    this.#say(
      runtimeUserNamespaces()
        ? "Runtime Pods: hostUsers: false, each Run its own uid in its Pod's user namespace (PerRunUser)"
        : 'WARNING: not root, so the local node cannot give Runtime Pods user namespaces: their Runs run as your own user (SharedUser); run there only code you would run in your own shell',
    );
  }

  /**
   * scheduler, controller-manager, stale-recovery and the gateway, each as its own
   * ServiceAccount and with its /metrics on loopback; resolves once the gateway answers,
   * with what Prometheus scrapes.
   */
  async #startServices(
    gateway: GatewayPlan,
    internalCaDir: string,
    kubeconfigOf: (service: ServiceName) => Promise<string>,
    otlpEndpoint: string | undefined,
  ): Promise<ScrapedService[]> {
    const leaseFlags = ['--lease-namespace', SYSTEM_NAMESPACE];
    // Spans in the Runtime Pods (through the controller-manager's workload config) and the gateway.
    const tracing = otlpEndpoint === undefined ? [] : ['--runtime-otlp-endpoint', otlpEndpoint];
    const tracingEnv: Record<string, string> = otlpEndpoint === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint };
    const [schedulerMetrics = 0, managerMetrics = 0, recoveryMetrics = 0] = await freePorts(3);
    const metrics = (port: number): string[] => ['--metrics-address', `127.0.0.1:${String(port)}`];
    await this.#startService('scheduler', 'apps/scheduler/src/main.ts', [
      ...['--kubeconfig', await kubeconfigOf('scheduler'), ...leaseFlags, ...metrics(schedulerMetrics)],
    ]);
    await this.#startService('controller-manager', 'apps/controller-manager/src/main.ts', [
      ...['--kubeconfig', await kubeconfigOf('controller-manager'), ...leaseFlags, '--internal-ca-dir', internalCaDir],
      ...metrics(managerMetrics),
      ...tracing,
      ...['--runtimed-image', IMAGES.runtimed, '--python-image', IMAGES.python, '--bash-image', IMAGES.bash],
      ...['--runtime-service-account', RUNTIMED_SERVICE_ACCOUNT, '--runtime-server-listen', 'podIP'],
      // The local node gives hostUsers: false Pods user namespaces of their own as root only.
      ...['--user-namespaces', String(runtimeUserNamespaces())],
    ]);
    const recoveryKubeconfig = await kubeconfigOf('stale-recovery');
    await this.#startService('stale-recovery', 'apps/stale-recovery/src/main.ts', [
      ...['--kubeconfig', recoveryKubeconfig, ...leaseFlags, ...metrics(recoveryMetrics)],
    ]);
    const gatewayProcess = await this.#startService(
      'runtime-gateway',
      'apps/runtime-gateway/src/main.ts',
      [
        ...['--listen', `127.0.0.1:${String(gateway.port)}`, '--tls-cert-file', gateway.files.cert, '--tls-key-file', gateway.files.key],
        ...['--runtimed-ca-file', join(internalCaDir, 'ca.crt'), '--resolve', 'endpoints'],
        ...['--kubeconfig', await kubeconfigOf('runtime-gateway'), '--metrics-address', `127.0.0.1:${String(gateway.metricsPort)}`],
        // No kube-proxy between the callers and this process: nothing to wait for on a stop.
        ...['--drain-seconds', '5', '--shutdown-delay-seconds', '0'],
      ],
      tracingEnv,
    );
    await waitUntil('the runtime-gateway answering HTTPS', this.#signal, START_TIMEOUT_MS, async () => {
      if (gatewayProcess.exitCode !== undefined)
        throw new Error(`the runtime-gateway exited (${String(gatewayProcess.exitCode)}); see ${gatewayProcess.log}`);
      return (await httpsStatus(`${gateway.url}/`, gateway.caPem)) !== undefined;
    });
    this.#say(
      `scheduler, controller-manager, stale-recovery and runtime-gateway (${gateway.url}) running, each with its own ServiceAccount`,
    );
    // The chart's metrics Services (`<name>-metrics`); only the controller-manager's monitor honours the series' labels.
    const scraped = (service: ServiceName, port: number): ScrapedService => ({
      service: `kruntimes-${service}-metrics`,
      address: `127.0.0.1:${String(port)}`,
      honorLabels: service === 'controller-manager',
    });
    return [
      scraped('scheduler', schedulerMetrics),
      scraped('controller-manager', managerMetrics),
      scraped('stale-recovery', recoveryMetrics),
      scraped('runtime-gateway', gateway.metricsPort),
    ];
  }

  /** Prometheus on loopback, discovering Runtime Pods with a ServiceAccount that may only read Pods. */
  async #startPrometheus(
    services: readonly ScrapedService[],
    kubeconfigOf: (service: typeof PROMETHEUS_SERVICE_ACCOUNT) => Promise<string>,
  ): Promise<DevPrometheus> {
    const binDir = this.#binDir;
    if (binDir === undefined) throw new Error('the binaries were not built');
    const prometheus = await startPrometheus({
      dir: this.#options.dir,
      binDir,
      systemNamespace: SYSTEM_NAMESPACE,
      services,
      kubeconfigFile: await kubeconfigOf(PROMETHEUS_SERVICE_ACCOUNT),
      signal: this.#signal,
      say: this.#say,
      start: (name, program, args) => this.#supervise(spawnProgram(this.#options.dir, name, program, args)),
      discard: (component) => this.#discard(component),
    });
    this.state.prometheusUrl = prometheus.url;
    await writeState(this.state);
    this.#say(`prometheus (${prometheus.url}) scraping the services and every Runtime Pod as the chart's monitors would`);
    return prometheus;
  }

  /**
   * Every dashboard query through Prometheus, after steady traffic and a scrape that follows
   * it. The traffic starts once the services and every demo Runtime Pod are scraped: a series
   * first seen after its increase shows no rate.
   */
  async #checkDashboards(
    prometheus: DevPrometheus,
    services: number,
    admin: KubeConfig,
    invoker: DemoInvoker,
    check: () => void,
  ): Promise<true> {
    await waitForScrapes(prometheus.url, new Date(), services + DEMO.length, this.#signal);
    this.#say(await dashboardTraffic(admin, invoker, this.#signal, check));
    const report = await checkDashboards(prometheus.url, this.#signal);
    for (const line of report.lines) this.#options.out(line);
    if (report.failures > 0) throw new DevError(`${String(report.failures)} dashboard queries failed (see the dashboards lines)`);
    return true;
  }

  async #prepareDemo(controlPlane: ControlPlane, admin: KubeConfig): Promise<DemoInvoker> {
    const invoker = await prepareDemoInvoker(admin, this.#options.dir, controlPlane.server, controlPlane.cluster.info.caPem);
    this.state.invokerKubeconfig = invoker.kubeconfig;
    await writeState(this.state);
    await createDemoObjects(admin);
    this.#say(`namespace ${DEMO_NAMESPACE}: Runtimes python and bash, function Runs hello-py and echo-sh; waiting`);
    return invoker;
  }

  /** The listening ports (checked closed after the stop) and the commands to try next. */
  async #announceReady(invoker: DemoInvoker): Promise<void> {
    const { dir, out } = this.#options;
    const pids = await environmentProcesses(
      dir,
      this.#running.map((component) => component.pid),
    );
    const sockets = await listeningSocketsOf(pids);
    const listening = sockets.map(formatSocket);
    Object.assign(this.state, { listening, listeningInodes: sockets.map((socket) => socket.inode ?? ''), phase: 'ready' });
    await writeState(this.state);
    out(`ports: ${listening.join(' ')}`);
    out('');
    const dirArg = this.#options.dirFlag ? ` --dir ${dir}` : '';
    out('Next (krt is node_modules/.bin/krt after npm ci: npx krt ...):');
    out(`  export KUBECONFIG=${this.state.kubeconfig ?? ''}    # admin; or: eval "$(npx krt dev env${dirArg})"`);
    out(`  npx krt invoke hello-py -n ${DEMO_NAMESPACE} --kubeconfig ${invoker.kubeconfig} --data '{"name":"you"}'`);
    out(`  npx krt invoke echo-sh -n ${DEMO_NAMESPACE} --kubeconfig ${invoker.kubeconfig} --data '{"n":1}'`);
    // The kubectl pinned with the control plane, which the build left beside it.
    out(`  ${this.#binDir === undefined ? 'kubectl' : join(this.#binDir, 'kubectl')} get runtimes,runs -n ${DEMO_NAMESPACE}`);
    out(`  npx krt get -n ${DEMO_NAMESPACE}`);
    out(
      `  npx krt artifacts ${DEMO_ARTIFACT_RUN} -n ${DEMO_NAMESPACE} --get report.csv -o report.csv    # admin: reads the store's Secret`,
    );
    if (this.state.prometheusUrl !== undefined)
      out(`  curl -s '${this.state.prometheusUrl}/api/v1/query?query=kruntimes_function_invocations_total'    # Prometheus`);
    out(`  npx krt dev status${dirArg}; npx krt dev logs${dirArg} [COMPONENT|POD/CONTAINER]`);
    out(`  npx krt dev down${dirArg}    # or Ctrl-C here`);
  }

  /** Until a stop is requested (0) or a component or the control plane exits on its own (1). */
  async #runUntilStopped(controlPlane: ControlPlane): Promise<number> {
    const failed = this.#failed.size === 0 ? '' : `; failed beside the demo: ${[...this.#failed].join(', ')} (see above)`;
    this.#say(`${READY_LINE} until Ctrl-C or \`krt dev down\` (state: ${stateFile(this.#options.dir)})${failed}`);
    this.#watchParts();
    const stopped = new Promise<undefined>((resolve) => {
      this.#signal.addEventListener(
        'abort',
        () => {
          resolve(undefined);
        },
        { once: true },
      );
    });
    // The services are restarted (ServiceRestarts) unless they keep failing; anything else that exits stops everything.
    const died = await Promise.race([
      stopped,
      ...this.#running
        .filter((component) => !this.#restarts.restarts(component.name) && !PART_COMPONENTS.has(component.name))
        .map(async (component) => component.exited.then(() => `${component.name} exited unexpectedly; see ${component.log}`)),
      controlPlane.anyExit().then((process) => `control plane exited unexpectedly; see ${process.logFile}`),
      this.#restarts.crashLoop,
    ]);
    if (died === undefined) return 0;
    this.#say(`${died}. Stopping everything`);
    return 1;
  }

  /** A part's component (Jaeger, Prometheus) exiting later fails its part; the rest keeps running. */
  #watchParts(): void {
    for (const component of this.#running.filter((running) => PART_COMPONENTS.has(running.name))) {
      void component.exited.then(async () => {
        const how = describeExit(component.exitCode, component.exitSignal);
        await this.#partFailed(component.name as PartName, new DevError(`${component.name} exited (${how}); see ${component.log}`));
      });
    }
  }
}
