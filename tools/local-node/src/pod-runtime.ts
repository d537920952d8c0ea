import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  CoreV1Api,
  V1Container,
  V1ContainerState,
  V1ContainerStatus,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
  V1Probe,
} from '@kubernetes/client-node';
import { backoffDelayMs, backoffResets } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { imageCommand } from './config.ts';
import { chooseLogInstance } from './container-logs.ts';
import type { ImageCommand } from './config.ts';
import { containerEnv } from './env.ts';
import { ContainerConfigError, errorMessage } from './errors.ts';
import { expand } from './expand.ts';
import { groupAlive, signalGroup } from '@kruntimes/host';
import type { Watchdog } from '@kruntimes/host';
import { descendantGroups, processTable, startProcessGroup } from './process-group.ts';
import type { ExitStatus } from './process-group.ts';
import { probeTiming, runProbe } from './probes.ts';
import { prepareContainerRoot, prepareVolumes } from './volumes.ts';
import { checkPassable, containerTmpDir, secureWalledPod } from './pod-ownership.ts';
import type { UidRangePool } from './uid-range-pool.ts';
import { UserNamespaceHandle } from './user-namespace-handle.ts';
import { containerIdentity, setprivArgs, usesUserNamespace } from './user-namespace.ts';
import type { ContainerIdentity } from './user-namespace.ts';

export interface PodRuntimeDeps {
  core: CoreV1Api;
  images: Readonly<Record<string, ImageCommand>>;
  backoff: BackoffOptions;
  apiServer: { host: string; port: number };
  hostIP: string;
  stateDir: string;
  watchdog: Watchdog;
  /** Host id ranges of the Pods with `hostUsers: false`. */
  uidRanges: UidRangePool;
  /** Something in the Pod changed (exit, probe result): its status should be written. */
  onChange: () => void;
  onEvent: (event: LocalNodeEvent) => void;
}

/** What the agent did, for tests and logs (the kubelet records these as Events). */
export type LocalNodeEvent =
  | { type: 'Started'; pod: string; uid: string; container: string; pid: number }
  | { type: 'Exited'; pod: string; uid: string; container: string; code: number | null; signal: string | null }
  | { type: 'BackOff'; pod: string; uid: string; container: string; delayMs: number; restartCount: number }
  | { type: 'Killing'; pod: string; uid: string; container: string; signal: NodeJS.Signals }
  | { type: 'Failed'; pod: string; uid: string; container: string; reason: string; message: string };

interface Terminated {
  exitCode: number;
  signal: number | undefined;
  reason: string;
  startedAt: Date;
  finishedAt: Date;
}

type State =
  | { kind: 'waiting'; reason: string; message?: string }
  | { kind: 'running'; pid: number; startedAt: Date; exited: Promise<ExitStatus> }
  | { kind: 'terminated'; terminated: Terminated };

interface ContainerRuntime {
  spec: V1Container;
  state: State;
  lastTerminated: Terminated | undefined;
  restartCount: number;
  consecutiveFailures: number;
  ready: boolean;
  /** Bumped on every start; probe loops and restart timers of an older start stop. */
  generation: number;
  restartTimer: NodeJS.Timeout | undefined;
  /** The start (generation - 1) that lastTerminated describes: `previous` logs read its file. */
  lastTerminatedInstance: number | undefined;
  /** When the current start's output is all written: a follower of its log ends then. */
  logsClosed: Promise<void>;
  env: Record<string, string>;
  cwd: string;
  /** `hostUsers: false`: who the container is in its user namespace, and that namespace. */
  walled: { identity: ContainerIdentity; namespace: UserNamespaceHandle } | undefined;
}

/** A `hostUsers: false` Pod's host id range: its uid and gid 0 is `base`. */
interface WalledPod {
  base: number;
  identities: Map<string, ContainerIdentity>;
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGTERM: 15,
};
const KILL_WAIT_MS = 5_000;

/** One Pod on this node: its address, volumes and container processes. */
export class PodRuntime {
  readonly uid: string;
  readonly key: string;
  readonly podIP: string;
  readonly podDir: string;
  readonly logDir: string;
  /** Set by the force-delete test hook: the object is gone but the processes run on. */
  zombie = false;
  #pod: V1Pod;
  readonly #deps: PodRuntimeDeps;
  readonly #containers = new Map<string, ContainerRuntime>();
  readonly #startTime = new Date();
  readonly #conditionTimes = new Map<string, { status: string; time: Date }>();
  #prepared = false;
  #terminating = false;
  #frozen = false;
  #walled: WalledPod | undefined;

  constructor(pod: V1Pod, podIP: string, deps: PodRuntimeDeps) {
    this.#pod = pod;
    this.#deps = deps;
    this.uid = pod.metadata?.uid ?? '';
    this.key = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    this.podIP = podIP;
    const dirName = `${pod.metadata?.namespace ?? ''}_${pod.metadata?.name ?? ''}_${this.uid}`;
    this.podDir = join(deps.stateDir, 'pods', dirName);
    this.logDir = join(deps.stateDir, 'logs', dirName);
    for (const spec of pod.spec?.containers ?? []) {
      this.#containers.set(spec.name, {
        spec,
        state: { kind: 'waiting', reason: 'ContainerCreating' },
        lastTerminated: undefined,
        restartCount: 0,
        consecutiveFailures: 0,
        ready: false,
        generation: 0,
        restartTimer: undefined,
        lastTerminatedInstance: undefined,
        logsClosed: Promise.resolve(),
        env: {},
        cwd: this.podDir,
        walled: undefined,
      });
    }
  }

  get pod(): V1Pod {
    return this.#pod;
  }

  update(pod: V1Pod): void {
    this.#pod = pod;
  }

  /** The plain log of a container: the output of every start, as written. */
  logFile(container: string): string {
    return join(this.logDir, `${container}.log`);
  }

  /** The CRI log of one start of a container (0 is the first), as the kubelet lays them out. */
  criLogFile(container: string, instance: number): string {
    return join(this.logDir, container, `${String(instance)}.log`);
  }

  /**
   * The log the kubelet's endpoint serves for a container: the file of the start that
   * `previous` (or not) names, and when that start's output ends; the kubelet's message
   * when there is none; undefined for a container the Pod does not have.
   */
  containerLog(name: string, previous: boolean): { file: string; closed: Promise<void> } | { error: string } | undefined {
    const container = this.#containers.get(name);
    if (container === undefined) return undefined;
    const { state, generation, lastTerminatedInstance } = container;
    const current = generation - 1;
    const chosen = chooseLogInstance(
      name,
      this.#pod.metadata?.name ?? '',
      {
        state: state.kind,
        ...(state.kind === 'waiting' ? { waitingReason: state.reason } : {}),
        ...(state.kind !== 'waiting' && generation > 0 ? { instance: current } : {}),
        ...(lastTerminatedInstance === undefined ? {} : { lastTerminatedInstance }),
      },
      previous,
    );
    if ('error' in chosen) return chosen;
    return {
      file: this.criLogFile(name, chosen.instance),
      closed: chosen.instance === current ? container.logsClosed : Promise.resolve(),
    };
  }

  /** PIDs (= process group IDs) of the running containers. */
  pids(): number[] {
    return [...this.#containers.values()].flatMap((c) => (c.state.kind === 'running' ? [c.state.pid] : []));
  }

  /**
   * Prepares volumes and starts every container that has not been started yet. A
   * ContainerConfigError leaves the containers waiting with its reason; the caller
   * retries with back-off, as the kubelet's pod workers do.
   */
  async ensureStarted(): Promise<void> {
    if (this.#prepared || this.#terminating) return;
    try {
      const walled = usesUserNamespace(this.#pod) ? await this.#walledPod() : undefined;
      const volumeDirs = await prepareVolumes({
        core: this.#deps.core,
        pod: this.#pod,
        podIP: this.podIP,
        hostIP: this.#deps.hostIP,
        podDir: this.podDir,
      });
      for (const container of this.#containers.values()) await this.#configure(container, volumeDirs);
      if (walled !== undefined) {
        await secureWalledPod(this.#pod, this.podDir, volumeDirs, walled.identities, walled.base);
        for (const container of this.#containers.values()) await this.#enterUserNamespace(container, walled);
      }
    } catch (error) {
      const reason = error instanceof ContainerConfigError ? error.reason : 'CreateContainerError';
      for (const container of this.#containers.values()) container.state = { kind: 'waiting', reason, message: errorMessage(error) };
      throw error;
    }
    this.#prepared = true;
    for (const container of this.#containers.values()) this.#start(container);
  }

  /**
   * The Pod's host id range (taken once, kept across retries until dispose) and each
   * container's identity in it; a container the kubelet would refuse (runAsNonRoot as
   * uid 0, an unknown capability) fails the Pod's start with the kubelet's reason.
   */
  async #walledPod(): Promise<WalledPod> {
    const identities = new Map<string, ContainerIdentity>();
    for (const { spec } of this.#containers.values()) {
      const identity = containerIdentity(this.#pod, spec);
      if (identity instanceof Error) throw new ContainerConfigError('CreateContainerConfigError', identity.message);
      identities.set(spec.name, identity);
    }
    await checkPassable(this.podDir);
    this.#walled ??= { base: this.#deps.uidRanges.allocate(), identities };
    this.#walled.identities = identities;
    return this.#walled;
  }

  async #enterUserNamespace(container: ContainerRuntime, walled: WalledPod): Promise<void> {
    const identity = walled.identities.get(container.spec.name);
    if (identity === undefined) return;
    let namespace = container.walled?.namespace;
    if (namespace === undefined) {
      try {
        namespace = await UserNamespaceHandle.create(walled.base);
      } catch (error) {
        throw new ContainerConfigError('CreateContainerError', errorMessage(error), { cause: error });
      }
    }
    container.walled = { identity, namespace };
    // The image's /tmp would be the container's own; the host's is every Pod's.
    if (!('TMPDIR' in container.env)) container.env.TMPDIR = containerTmpDir(this.podDir, container.spec.name);
    // As containerd gives a user the image has no passwd entry for: without it, the home
    // directory lookup of a mapped uid fails (node's os.homedir() throws).
    if (!('HOME' in container.env)) container.env.HOME = '/';
  }

  async #configure(container: ContainerRuntime, volumeDirs: ReadonlyMap<string, string>): Promise<void> {
    const root = await prepareContainerRoot(this.podDir, container.spec, volumeDirs);
    const image = container.spec.image ?? '';
    const mapped = imageCommand(this.#deps.images, image);
    if (mapped === undefined)
      throw new ContainerConfigError('ErrImagePull', `image ${image} has no local command in the local node's image mapping`);
    container.env = await containerEnv({
      core: this.#deps.core,
      pod: this.#pod,
      container: container.spec,
      podIP: this.podIP,
      hostIP: this.#deps.hostIP,
      imageEnv: mapped.env ?? {},
      containerRoot: root,
      apiServer: this.#deps.apiServer,
    });
    for (const name of mapped.pathEnv ?? []) {
      const value = container.env[name];
      if (value?.startsWith('/') === true) container.env[name] = join(root, value);
    }
    const workingDir = container.spec.workingDir;
    container.cwd = workingDir === undefined || workingDir === '' ? (mapped.workingDir ?? root) : join(root, workingDir);
  }

  #argv(container: ContainerRuntime): string[] {
    const mapped = imageCommand(this.#deps.images, container.spec.image ?? '');
    const command = container.spec.command ?? mapped?.entrypoint ?? [];
    // As with a container runtime: `command` replaces ENTRYPOINT and drops CMD; `args` replace CMD.
    const args = container.spec.args ?? (container.spec.command === undefined ? (mapped?.cmd ?? []) : []);
    return [...command, ...args].map((part) => expand(part, (name) => container.env[name]));
  }

  #start(container: ContainerRuntime): void {
    if (this.#terminating) return;
    container.generation += 1;
    container.ready = false;
    const name = container.spec.name;
    const walled = container.walled;
    const argv = this.#argv(container);
    const started = startProcessGroup(walled === undefined ? argv : [...walled.namespace.prefix(setprivArgs(walled.identity)), ...argv], {
      cwd: container.cwd,
      env: container.env,
      logs: { plain: this.logFile(name), cri: this.criLogFile(name, container.generation - 1) },
      ...(walled === undefined ? {} : { namespaceFd: walled.namespace.fd }),
    });
    container.logsClosed = started.logsClosed;
    const startedAt = new Date();
    if (started.pid > 0) this.#deps.watchdog.watchProcessGroup(started.pid);
    container.state = { kind: 'running', pid: started.pid, startedAt, exited: started.exited };
    this.#deps.onEvent({ type: 'Started', pod: this.key, uid: this.uid, container: name, pid: started.pid });
    const generation = container.generation;
    void started.exited.then((exit) => {
      this.#onExit(container, generation, started.pid, startedAt, exit);
    });
    this.#startProbes(container, generation);
    this.#deps.onChange();
  }

  #onExit(container: ContainerRuntime, generation: number, pid: number, startedAt: Date, exit: ExitStatus): void {
    // A container's processes live and die together: whatever the leader left behind goes too.
    if (pid > 0) {
      signalGroup(pid, 'SIGKILL');
      this.#deps.watchdog.releaseProcessGroup(pid);
    }
    const finishedAt = new Date();
    const exitCode = exit.code ?? 128 + (exit.signal === null ? 0 : (SIGNAL_NUMBERS[exit.signal] ?? 0));
    const terminated: Terminated = {
      exitCode,
      signal: exit.signal === null ? undefined : SIGNAL_NUMBERS[exit.signal],
      reason: exitCode === 0 ? 'Completed' : 'Error',
      startedAt,
      finishedAt,
    };
    container.ready = false;
    container.state = { kind: 'terminated', terminated };
    this.#deps.onEvent({
      type: 'Exited',
      pod: this.key,
      uid: this.uid,
      container: container.spec.name,
      code: exit.code,
      signal: exit.signal,
    });
    if (generation === container.generation && !this.#terminating && this.#shouldRestart(exitCode)) {
      if (backoffResets(this.#deps.backoff, finishedAt.getTime() - startedAt.getTime())) container.consecutiveFailures = 0;
      container.consecutiveFailures += 1;
      const delayMs = backoffDelayMs(this.#deps.backoff, container.consecutiveFailures);
      container.lastTerminated = terminated;
      container.lastTerminatedInstance = generation - 1;
      container.restartCount += 1;
      container.state = {
        kind: 'waiting',
        reason: 'CrashLoopBackOff',
        message: `back-off ${formatDuration(delayMs)} restarting failed container=${container.spec.name} pod=${this.key}(${this.uid})`,
      };
      this.#deps.onEvent({
        type: 'BackOff',
        pod: this.key,
        uid: this.uid,
        container: container.spec.name,
        delayMs,
        restartCount: container.restartCount,
      });
      container.restartTimer = setTimeout(() => {
        container.restartTimer = undefined;
        this.#start(container);
      }, delayMs);
    }
    this.#deps.onChange();
  }

  #shouldRestart(exitCode: number): boolean {
    const policy = this.#pod.spec?.restartPolicy ?? 'Always';
    return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
  }

  /** Readiness and liveness loops of one container start; they end with that start. */
  #startProbes(container: ContainerRuntime, generation: number): void {
    const { readinessProbe, livenessProbe } = container.spec;
    if (readinessProbe === undefined) container.ready = true;
    else void this.#probeLoop(container, generation, readinessProbe, 'readiness');
    if (livenessProbe !== undefined) void this.#probeLoop(container, generation, livenessProbe, 'liveness');
  }

  async #probeLoop(container: ContainerRuntime, generation: number, probe: V1Probe, kind: 'readiness' | 'liveness'): Promise<void> {
    const timing = probeTiming(probe);
    const current = (): boolean => container.generation === generation && container.state.kind === 'running' && !this.#terminating;
    await sleep(timing.initialDelayMs);
    let successes = 0;
    let failures = 0;
    while (current()) {
      const result = this.#frozen
        ? { ok: false as const, message: 'pod frozen' }
        : await runProbe(probe, {
            podIP: this.podIP,
            container: container.spec,
            env: container.env,
            cwd: container.cwd,
            ...(container.walled === undefined
              ? {}
              : {
                  userNamespace: {
                    prefix: container.walled.namespace.prefix(setprivArgs(container.walled.identity)),
                    fd: container.walled.namespace.fd,
                  },
                }),
          });
      if (!current()) return;
      if (result.ok) {
        successes += 1;
        failures = 0;
      } else {
        failures += 1;
        successes = 0;
      }
      if (kind === 'readiness') {
        const ready = result.ok
          ? container.ready || successes >= timing.successThreshold
          : container.ready && failures < timing.failureThreshold;
        if (ready !== container.ready) {
          container.ready = ready;
          this.#deps.onChange();
        }
      } else if (failures >= timing.failureThreshold) {
        // The kubelet kills a container that fails liveness and lets restartPolicy decide.
        this.#deps.onEvent({
          type: 'Failed',
          pod: this.key,
          uid: this.uid,
          container: container.spec.name,
          reason: 'Unhealthy',
          message: `Liveness probe failed: ${result.ok ? '' : result.message}`,
        });
        await this.#killContainer(container, this.#graceSeconds() * 1000);
        return;
      }
      await sleep(timing.periodMs);
    }
  }

  #graceSeconds(): number {
    return this.#pod.metadata?.deletionGracePeriodSeconds ?? this.#pod.spec?.terminationGracePeriodSeconds ?? 30;
  }

  /** SIGTERM, up to `graceMs` for the group to exit, then SIGKILL (at once for a grace of 0). */
  async #killContainer(container: ContainerRuntime, graceMs: number): Promise<void> {
    const state = container.state;
    if (state.kind !== 'running') return;
    // A grace of 0 kills at once, with no SIGTERM first, as the CRI's StopContainer does with a timeout of 0:
    // a SIGTERM would let runtimed start a drain (and hand Runs over) in the moment before the SIGKILL.
    if (graceMs > 0) {
      this.#deps.onEvent({ type: 'Killing', pod: this.key, uid: this.uid, container: container.spec.name, signal: 'SIGTERM' });
      signalGroup(state.pid, 'SIGTERM');
      // A frozen Pod would sit on SIGTERM forever; let it see the signal.
      signalGroup(state.pid, 'SIGCONT');
    }
    const exitedInGrace = graceMs > 0 && (await Promise.race([state.exited.then(() => true), sleep(graceMs).then(() => false)]));
    if (!exitedInGrace) {
      this.#deps.onEvent({ type: 'Killing', pod: this.key, uid: this.uid, container: container.spec.name, signal: 'SIGKILL' });
      // Read before the leader dies: the groups its processes started (tasks) die with it, as in a container's cgroup.
      const others = descendantGroups(state.pid, await processTable());
      signalGroup(state.pid, 'SIGKILL');
      for (const group of others) signalGroup(group, 'SIGKILL');
      await Promise.race([state.exited, sleep(KILL_WAIT_MS)]);
    }
  }

  /** Stops every container: no restarts, SIGTERM, the grace period, SIGKILL. */
  async terminate(graceMs: number = this.#graceSeconds() * 1000): Promise<void> {
    this.#terminating = true;
    for (const container of this.#containers.values()) {
      if (container.restartTimer !== undefined) clearTimeout(container.restartTimer);
      container.restartTimer = undefined;
    }
    await Promise.all([...this.#containers.values()].map((c) => this.#killContainer(c, graceMs)));
    for (const container of this.#containers.values()) {
      if (container.state.kind === 'waiting') container.state = { kind: 'waiting', reason: 'PodTerminating' };
    }
  }

  /** Removes the Pod's directory (volumes, container roots); logs stay for `krt logs`. */
  async dispose(): Promise<void> {
    await rm(this.podDir, { recursive: true, force: true });
    for (const container of this.#containers.values()) container.walled?.namespace.close();
    // Called once no process of the Pod is left: its ids may go to another Pod.
    if (this.#walled !== undefined) this.#deps.uidRanges.release(this.#walled.base);
    this.#walled = undefined;
  }

  /** True once no process of this Pod is alive. */
  stopped(): boolean {
    return this.pids().every((pid) => !groupAlive(pid));
  }

  // ---- test hooks ----

  crash(containerName: string, signal: NodeJS.Signals = 'SIGKILL'): boolean {
    const container = this.#containers.get(containerName);
    if (container?.state.kind !== 'running') return false;
    return signalGroup(container.state.pid, signal);
  }

  freeze(): void {
    this.#frozen = true;
    for (const pid of this.pids()) signalGroup(pid, 'SIGSTOP');
  }

  thaw(): void {
    for (const pid of this.pids()) signalGroup(pid, 'SIGCONT');
    this.#frozen = false;
  }

  // ---- status ----

  /** The kubelet's view of the Pod: phase, conditions, container statuses, addresses. */
  status(existing: V1PodStatus | undefined): V1PodStatus {
    const containers = [...this.#containers.values()];
    const statuses = containers.map((c) => this.#containerStatus(c));
    const allReady = containers.length > 0 && containers.every((c) => c.ready && c.state.kind === 'running');
    const phase = this.#phase(containers);
    const conditions: V1PodCondition[] = [
      this.#condition('PodReadyToStartContainers', this.#prepared),
      this.#condition('Initialized', true),
      this.#condition('ContainersReady', allReady, allReady ? undefined : 'ContainersNotReady'),
      this.#condition('Ready', allReady, allReady ? undefined : 'ContainersNotReady'),
    ];
    const owned = new Set(conditions.map((c) => c.type));
    const others = (existing?.conditions ?? []).filter((c) => !owned.has(c.type));
    return {
      phase,
      conditions: [...others, ...conditions],
      hostIP: this.#deps.hostIP,
      hostIPs: [{ ip: this.#deps.hostIP }],
      podIP: this.podIP,
      podIPs: [{ ip: this.podIP }],
      startTime: this.#startTime,
      qosClass: existing?.qosClass ?? 'BestEffort',
      containerStatuses: statuses,
    };
  }

  #phase(containers: ContainerRuntime[]): string {
    const everStarted = (c: ContainerRuntime): boolean => c.state.kind !== 'waiting' || c.restartCount > 0;
    if (containers.some((c) => !everStarted(c))) return 'Pending';
    const policy = this.#pod.spec?.restartPolicy ?? 'Always';
    const terminated = containers.flatMap((c) => (c.state.kind === 'terminated' ? [c.state.terminated] : []));
    if (terminated.length < containers.length || policy === 'Always') return 'Running';
    if (terminated.every((t) => t.exitCode === 0)) return 'Succeeded';
    return policy === 'Never' ? 'Failed' : 'Running';
  }

  #condition(type: string, ok: boolean, reason?: string): V1PodCondition {
    const status = ok ? 'True' : 'False';
    let entry = this.#conditionTimes.get(type);
    if (entry?.status !== status) {
      entry = { status, time: new Date() };
      this.#conditionTimes.set(type, entry);
    }
    return { type, status, lastTransitionTime: entry.time, ...(reason === undefined ? {} : { reason }) };
  }

  #containerStatus(container: ContainerRuntime): V1ContainerStatus {
    const { state } = container;
    const image = container.spec.image ?? '';
    return {
      name: container.spec.name,
      image,
      imageID: `local://${image}`,
      ...(state.kind === 'running' ? { containerID: `local://${state.pid}` } : {}),
      ready: container.ready && state.kind === 'running',
      started: state.kind === 'running',
      restartCount: container.restartCount,
      state: toApiState(state),
      ...(container.lastTerminated === undefined ? {} : { lastState: { terminated: toApiTerminated(container.lastTerminated) } }),
    };
  }
}

function toApiState(state: State): V1ContainerState {
  switch (state.kind) {
    case 'waiting':
      return { waiting: { reason: state.reason, ...(state.message === undefined ? {} : { message: state.message }) } };
    case 'running':
      return { running: { startedAt: state.startedAt } };
    case 'terminated':
      return { terminated: toApiTerminated(state.terminated) };
  }
}

function toApiTerminated(t: Terminated): NonNullable<V1ContainerState['terminated']> {
  return {
    exitCode: t.exitCode,
    reason: t.reason,
    startedAt: t.startedAt,
    finishedAt: t.finishedAt,
    ...(t.signal === undefined ? {} : { signal: t.signal }),
  };
}

function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
