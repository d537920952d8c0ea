// `dev up`: the whole local system in the foreground (see DEV_USAGE and the README).
import { spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { invokeFunction } from '@kruntimes/sdk';
import { ControlPlane, REPO_ROOT, freePorts, kubeconfigYaml, testCa, testServerCert } from '@kruntimes/testing';
import { parse, stringify } from 'yaml';
import { binariesWithProgress, formatElapsed } from './dev-binaries.ts';
import { environmentProcesses, formatSocket, listeningSocketsOf, stillListening, terminate } from './dev-processes.ts';
import {
  RUNTIMED_SERVICE_ACCOUNT,
  SYSTEM_NAMESPACE,
  installServiceRbac,
  namespacedServiceAccount,
  prepareRuntimeNamespace,
  serviceAccountToken,
} from './dev-rbac.ts';
import type { ServiceName } from './dev-rbac.ts';
import { httpsStatus } from './dev-https.ts';
import { readState, stateFile, writeState } from './dev-state.ts';
import type { DevComponent, DevState } from './dev-state.ts';
import { ensureInternalCa } from './internal-ca.ts';

export const DEMO_NAMESPACE = 'demo';
export const DEMO_INVOKER = 'demo-invoker';
/** The line a supervisor (or a test) waits for: everything is up and the demo answered. */
export const READY_LINE = 'ready: the local cluster keeps running';
const NODE_NAME = 'krt-dev';
const IMAGES = {
  runtimed: 'kruntimes/runtimed:dev',
  python: 'kruntimes/runtime-server-python:dev',
  bash: 'kruntimes/runtime-server-bash:dev',
} as const;
const STOP_GRACE_MS = 10_000;
const READY_TIMEOUT_MS = 120_000;

/** Room on each demo Pod for the README tour's own Runs beside the demo's. */
export const DEMO_RUNS_PER_POD = 4;

export const DEMO_PYTHON = `def handle(event, context):
    name = event.get("name", "world") if isinstance(event, dict) else "world"
    return {"greeting": f"Hello, {name}!", "language": "python"}
`;
export const DEMO_BASH = `handle() {
  local event
  event=$(cat)
  printf '{"echo":%s,"language":"bash"}' "$event"
}
`;
const DEMO = [
  { run: 'hello-py', runtime: 'python', language: 'python', source: DEMO_PYTHON, handler: 'main:handle', payload: { name: 'kruntimes' } },
  { run: 'echo-sh', runtime: 'bash', language: 'bash', source: DEMO_BASH, handler: 'handle', payload: { message: 'hello from bash' } },
] as const;

/** A failure explained by its message alone (printed without a stack). */
class DevError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DevError';
  }
}

class StopRequested extends Error {
  constructor(signal: string) {
    super(`${signal}: stopping`);
    this.name = 'StopRequested';
  }
}

interface Running extends DevComponent {
  name: string;
  exited: Promise<number | null>;
  exitCode: number | null | undefined;
}

export interface UpOptions {
  dir: string;
  /** The dir is not the default one: printed commands need --dir. */
  dirFlag: boolean;
  once: boolean;
  out: (line: string) => void;
}

/** Returns the exit code: 0 after a requested stop (or --once), 1 when something failed. */
export async function up(options: UpOptions): Promise<number> {
  const { dir, out } = options;
  const t0 = performance.now();
  const say = (line: string): void => {
    out(`[dev ${formatElapsed(performance.now() - t0).padStart(5)}] ${line}`);
  };

  const previous = await readState(dir);
  if (previous !== undefined && previous.supervisorPid !== process.pid) {
    const alive = await environmentProcesses(dir, [previous.supervisorPid]);
    if (alive.includes(previous.supervisorPid)) {
      say(`already running (pid ${String(previous.supervisorPid)}); \`krt dev down\` stops it`);
      return 1;
    }
    if (alive.length > 0) {
      say(`stopping ${String(alive.length)} leftover processes of an earlier run`);
      await terminate(alive, STOP_GRACE_MS);
    }
  }
  await mkdir(join(dir, 'logs'), { recursive: true, mode: 0o700 });

  // Register before starting: a signal during the start must still stop what was started.
  const stop = new AbortController();
  let stopSignal: string | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopSignal !== undefined) return;
    stopSignal = signal;
    say(`${signal}: stopping everything`);
    stop.abort(new StopRequested(signal));
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  const checkStop = (): void => {
    if (stop.signal.aborted) throw stop.signal.reason as Error;
  };
  // Signal listeners do not keep Node running, and the components are unref'd.
  const keepAlive = setInterval(() => undefined, 1 << 30);

  const state: DevState = { supervisorPid: process.pid, dir, phase: 'starting', startedAt: new Date().toISOString(), components: {} };
  await writeState(state);
  const running: Running[] = [];
  let controlPlane: ControlPlane | undefined;
  let code = 0;
  try {
    const missing = await missingPrerequisites();
    if (missing.length > 0) throw new DevError(`missing on the PATH: ${missing.join('; ')}`);
    const binDir = await binariesWithProgress(say, { signal: stop.signal });
    checkStop();
    say('starting etcd, kube-apiserver and kube-controller-manager on loopback');
    controlPlane = await ControlPlane.start({
      binDir,
      tmpRoot: dir,
      crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')],
      log: say,
    });
    const cluster = controlPlane.cluster;
    const kubeconfigs = await cluster.writeKubeconfigs(dir);
    const adminKubeconfig = kubeconfigs.admin ?? join(dir, 'admin.kubeconfig');
    Object.assign(state, { controlPlaneDir: controlPlane.info.dir, apiServer: controlPlane.server, kubeconfig: adminKubeconfig });
    await writeState(state);
    checkStop();

    const admin = cluster.kubeConfig();
    await installServiceRbac(admin);
    const kubeconfigOf = async (service: ServiceName): Promise<string> => {
      const token = await serviceAccountToken(admin, SYSTEM_NAMESPACE, service);
      const path = join(dir, `${service}.kubeconfig`);
      await writeFile(
        path,
        kubeconfigYaml({ server: controlPlane?.server ?? '', caPem: cluster.info.caPem, user: `${SYSTEM_NAMESPACE}:${service}`, token }),
        { mode: 0o600 },
      );
      return path;
    };
    say(`CRDs and RBAC installed (a ServiceAccount per service in ${SYSTEM_NAMESPACE}, bound to its rules from the code)`);

    // Certificates: the internal CA (kept across runs) and the gateway's serving CA + cert.
    const internalCaDir = join(dir, 'internal-ca');
    await ensureInternalCa(internalCaDir);
    const gatewayDir = join(dir, 'gateway');
    await mkdir(gatewayDir, { recursive: true, mode: 0o700 });
    // Valid for 30 days: a dev cluster may stay up for a while.
    const gatewayCa = await testCa('kruntimes local gateway CA', { validityDays: 30 });
    const serving = await testServerCert(gatewayCa, { dns: ['localhost'], ips: ['127.0.0.1'] }, { validityDays: 30 });
    const files = { ca: join(gatewayDir, 'ca.crt'), cert: join(gatewayDir, 'tls.crt'), key: join(gatewayDir, 'tls.key') };
    await writeFile(files.ca, gatewayCa.certPem);
    await writeFile(files.cert, serving.certPem);
    await writeFile(files.key, serving.keyPem, { mode: 0o600 });
    const [gatewayPort = 0, gatewayMetricsPort = 0] = await freePorts(2);
    const gatewayUrl = `https://127.0.0.1:${String(gatewayPort)}`;
    Object.assign(state, { gatewayUrl, gatewayCaFile: files.ca });
    checkStop();

    const start = async (name: string, script: string, args: string[]): Promise<Running> => {
      const component = spawnComponent(dir, name, script, args);
      running.push(component);
      state.components[name] = { pid: component.pid, log: component.log };
      await writeState(state);
      return component;
    };

    // The node agent plays the kubelet: it runs as admin, as a kubelet has node-wide rights.
    const nodeDir = join(dir, 'node');
    const nodeConfig = join(dir, 'local-node.json');
    await writeFile(
      nodeConfig,
      JSON.stringify(
        {
          nodeName: NODE_NAME,
          stateDir: nodeDir,
          images: {
            // Endpoint URLs of Runs point at this gateway, and carry its CA as caBundle.
            [IMAGES.runtimed.split(':')[0] ?? '']: {
              entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtimed/src/main.ts')],
              env: { KRT_GATEWAY_HOST: `127.0.0.1:${String(gatewayPort)}`, KRT_GATEWAY_CA_FILE: hostPathInContainer(nodeDir, files.ca) },
            },
            [IMAGES.python.split(':')[0] ?? '']: {
              entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')],
            },
            [IMAGES.bash.split(':')[0] ?? '']: { entrypoint: [process.execPath, join(REPO_ROOT, 'apps/runtime-server-bash/src/main.ts')] },
          },
          crashLoopBackoff: { initialMs: 500, maxMs: 10_000 },
        },
        null,
        2,
      ),
    );
    state.nodeDir = nodeDir;
    const node = await start('local-node', 'tools/local-node/src/main.ts', ['--config', nodeConfig, '--kubeconfig', adminKubeconfig]);
    await waitUntil('the local node agent', stop.signal, 60_000, async () => {
      if (node.exitCode !== undefined) throw new Error(`the local node agent exited (${String(node.exitCode)}); see ${node.log}`);
      return /^ready /m.test(await readFile(node.log, 'utf8').catch(() => ''));
    });
    say(`local node agent ${NODE_NAME} running (Runtime Pods as processes on 127.0.0.x)`);

    const leaseFlags = ['--lease-namespace', SYSTEM_NAMESPACE];
    await start('scheduler', 'apps/scheduler/src/main.ts', ['--kubeconfig', await kubeconfigOf('scheduler'), ...leaseFlags]);
    await start('controller-manager', 'apps/controller-manager/src/main.ts', [
      '--kubeconfig',
      await kubeconfigOf('controller-manager'),
      ...leaseFlags,
      '--internal-ca-dir',
      internalCaDir,
      '--runtimed-image',
      IMAGES.runtimed,
      '--python-image',
      IMAGES.python,
      '--bash-image',
      IMAGES.bash,
      '--runtime-service-account',
      RUNTIMED_SERVICE_ACCOUNT,
      '--runtime-server-listen',
      'podIP',
    ]);
    await start('stale-recovery', 'apps/stale-recovery/src/main.ts', ['--kubeconfig', await kubeconfigOf('stale-recovery'), ...leaseFlags]);
    const gateway = await start('runtime-gateway', 'apps/runtime-gateway/src/main.ts', [
      '--listen',
      `127.0.0.1:${String(gatewayPort)}`,
      '--tls-cert-file',
      files.cert,
      '--tls-key-file',
      files.key,
      '--runtimed-ca-file',
      join(internalCaDir, 'ca.crt'),
      '--resolve',
      'endpoints',
      '--kubeconfig',
      await kubeconfigOf('runtime-gateway'),
      '--metrics-address',
      `127.0.0.1:${String(gatewayMetricsPort)}`,
      '--drain-seconds',
      '5',
    ]);
    await waitUntil('the runtime-gateway answering HTTPS', stop.signal, 60_000, async () => {
      if (gateway.exitCode !== undefined) throw new Error(`the runtime-gateway exited (${String(gateway.exitCode)}); see ${gateway.log}`);
      return (await httpsStatus(`${gatewayUrl}/`, gatewayCa.certPem)) !== undefined;
    });
    say(`scheduler, controller-manager, stale-recovery and runtime-gateway (${gatewayUrl}) running, each with its own ServiceAccount`);
    const exitedEarly = (): void => {
      const dead = running.find((component) => component.exitCode !== undefined);
      if (dead !== undefined) throw new Error(`${dead.name} exited (${String(dead.exitCode)}); see ${dead.log}`);
    };

    // The demo.
    await prepareRuntimeNamespace(admin, DEMO_NAMESPACE);
    await namespacedServiceAccount(admin, DEMO_NAMESPACE, DEMO_INVOKER, [
      { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get'] },
    ]);
    const invokerToken = await serviceAccountToken(admin, DEMO_NAMESPACE, DEMO_INVOKER);
    const invokerKubeconfig = join(dir, `${DEMO_INVOKER}.kubeconfig`);
    await writeFile(
      invokerKubeconfig,
      withNamespace(
        kubeconfigYaml({
          server: controlPlane.server,
          caPem: cluster.info.caPem,
          user: `${DEMO_NAMESPACE}:${DEMO_INVOKER}`,
          token: invokerToken,
        }),
        DEMO_NAMESPACE,
      ),
      { mode: 0o600 },
    );
    state.invokerKubeconfig = invokerKubeconfig;
    await writeState(state);
    const objects = admin.makeApiClient(CustomObjectsApi);
    for (const demo of DEMO) {
      await createIfMissing(() =>
        objects.createNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace: DEMO_NAMESPACE,
          plural: RUNTIME_PLURAL,
          body: {
            apiVersion: `${API_GROUP}/${API_VERSION}`,
            kind: 'Runtime',
            metadata: { name: demo.runtime },
            spec: { language: demo.language, runs: DEMO_RUNS_PER_POD },
          },
        }),
      );
      await createIfMissing(() =>
        objects.createNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace: DEMO_NAMESPACE,
          plural: RUN_PLURAL,
          body: {
            apiVersion: `${API_GROUP}/${API_VERSION}`,
            kind: 'Run',
            metadata: { name: demo.run },
            spec: { runtime: demo.runtime, source: { inline: demo.source }, mode: { function: { handler: demo.handler } } },
          },
        }),
      );
    }
    say(`namespace ${DEMO_NAMESPACE}: Runtimes python and bash, function Runs hello-py and echo-sh; waiting for Ready`);
    const results: string[] = [];
    for (const demo of DEMO) {
      const run = await waitReady(admin, demo.run, stop.signal, exitedEarly);
      const endpoint = run.status?.endpoint;
      if (endpoint === undefined) throw new Error(`Run ${demo.run} is Ready without an endpoint`);
      const answer = await invokeFunction({
        url: endpoint.url,
        ...(endpoint.caBundle === undefined ? {} : { caBundle: endpoint.caBundle }),
        token: invokerToken,
        payload: demo.payload,
        timeoutMs: 60_000,
      });
      results.push(`  ${demo.run} (${demo.language}) ${JSON.stringify(demo.payload)} -> ${JSON.stringify(answer.result)}`);
    }
    say(`invoked through ${gatewayUrl} as ServiceAccount ${DEMO_NAMESPACE}/${DEMO_INVOKER} (it may only get Runs in ${DEMO_NAMESPACE}):`);
    for (const line of results) out(line);

    const listening = await listeningSocketsOf(
      await environmentProcesses(
        dir,
        running.map((component) => component.pid),
      ),
    );
    state.listening = listening.map(formatSocket);
    state.phase = 'ready';
    await writeState(state);
    out(`ports: ${state.listening.join(' ')}`);
    out('');
    const dirArg = options.dirFlag ? ` --dir ${dir}` : '';
    out('Next (krt is node_modules/.bin/krt after npm ci: npx krt ...):');
    out(`  export KUBECONFIG=${adminKubeconfig}    # admin; or: eval "$(npx krt dev env${dirArg})"`);
    out(`  npx krt invoke hello-py -n ${DEMO_NAMESPACE} --kubeconfig ${invokerKubeconfig} --data '{"name":"you"}'`);
    out(`  npx krt invoke echo-sh -n ${DEMO_NAMESPACE} --kubeconfig ${invokerKubeconfig} --data '{"n":1}'`);
    if (await onPath('kubectl')) out(`  kubectl get runtimes,runs -n ${DEMO_NAMESPACE}`);
    out(`  npx krt get -n ${DEMO_NAMESPACE}`);
    out(`  npx krt dev status${dirArg}; npx krt dev logs${dirArg} [COMPONENT|POD/CONTAINER]`);
    out(`  npx krt dev down${dirArg}    # or Ctrl-C here`);
    if (options.once) {
      say('--once: tearing everything down');
    } else {
      say(`${READY_LINE} until Ctrl-C or \`krt dev down\` (state: ${stateFile(dir)})`);
      const died = await Promise.race([
        new Promise<undefined>((resolve) => {
          stop.signal.addEventListener(
            'abort',
            () => {
              resolve(undefined);
            },
            { once: true },
          );
        }),
        ...running.map(async (component) => component.exited.then(() => component)),
        controlPlane.anyExit().then((process) => ({ name: 'control plane', log: process.logFile, exitCode: null })),
      ]);
      if (died !== undefined) {
        say(`${died.name} exited unexpectedly; see ${died.log}. Stopping everything`);
        code = 1;
      }
    }
  } catch (error) {
    if (error instanceof StopRequested || stop.signal.aborted) {
      code = 0;
    } else {
      say(`failed: ${error instanceof DevError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      code = 1;
    }
  } finally {
    state.phase = 'stopping';
    await writeState(state).catch(() => undefined);
    if (!(await teardown(dir, running, controlPlane, state, say))) code = 1;
    clearInterval(keepAlive);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(signal, onSignal);
  }
  return code;
}

/** Stops the services (gateway first), then the node agent (every Pod), then the control plane; checks nothing is left. */
async function teardown(
  dir: string,
  running: Running[],
  controlPlane: ControlPlane | undefined,
  state: DevState,
  say: (line: string) => void,
): Promise<boolean> {
  let clean = true;
  for (const component of [...running].reverse()) {
    const left = await terminate([component.pid], STOP_GRACE_MS);
    if (left.length > 0) {
      clean = false;
      say(`${component.name}: processes ${left.join(', ')} survived SIGKILL`);
    }
  }
  try {
    await controlPlane?.stop();
  } catch (error) {
    clean = false;
    say(`stopping the control plane: ${error instanceof Error ? error.message : String(error)}`);
  }
  // Whatever escaped its group (e.g. a Pod process of an agent that was killed).
  const leftovers = await environmentProcesses(
    dir,
    running.map((component) => component.pid),
  );
  if (leftovers.length > 0) {
    say(`stopping ${String(leftovers.length)} leftover processes: ${leftovers.join(', ')}`);
    const survivors = await terminate(leftovers, 3_000);
    if (survivors.length > 0) clean = false;
  }
  const listening = await stillListening(
    (state.listening ?? []).flatMap((text) => {
      const [host = '', port = ''] = text.split(/:(?=\d+$)/);
      return [{ host, port: Number(port) }];
    }),
  );
  if (listening.length > 0) {
    clean = false;
    say(`still listening after the stop: ${listening.map(formatSocket).join(' ')}`);
  }
  await rm(stateFile(dir), { force: true });
  say(clean ? 'stopped: no process and no listening port left' : 'stopped, but not cleanly (see above)');
  return clean;
}

function spawnComponent(dir: string, name: string, script: string, args: string[]): Running {
  const log = join(dir, 'logs', `${name}.log`);
  const fd = openSync(log, 'a');
  let child;
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, KRT_DEV_DIR: dir };
    delete env.KUBECONFIG;
    // Its own process group: Ctrl-C reaches only the supervisor, which stops the components in order.
    child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', join(REPO_ROOT, script), ...args], {
      cwd: dir,
      detached: true,
      stdio: ['ignore', fd, fd],
      env,
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`cannot start ${name}`);
  child.on('error', () => undefined);
  child.unref();
  const component: Running = {
    name,
    pid,
    log,
    exitCode: undefined,
    exited: new Promise((resolve) => {
      child.once('exit', (exitCode) => {
        component.exitCode = exitCode;
        resolve(exitCode);
      });
    }),
  };
  return component;
}

async function waitUntil(what: string, signal: AbortSignal, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (signal.aborted) throw signal.reason as Error;
    if (await probe()) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${String(timeoutMs / 1000)} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function waitReady(admin: KubeConfig, name: string, signal: AbortSignal, check: () => void): Promise<Run> {
  const objects = admin.makeApiClient(CustomObjectsApi);
  const core = admin.makeApiClient(CoreV1Api);
  let run: Run | undefined;
  try {
    await waitUntil(`Run ${name} to be Ready`, signal, READY_TIMEOUT_MS, async () => {
      check();
      run = (await objects.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: DEMO_NAMESPACE,
        plural: RUN_PLURAL,
        name,
      })) as Run;
      const phase = run.status?.phase;
      for (const pod of (await core.listNamespacedPod({ namespace: DEMO_NAMESPACE })).items) {
        const crashing = (pod.status?.containerStatuses ?? []).find((container) => container.restartCount >= 3);
        if (crashing !== undefined)
          throw new Error(
            `container ${crashing.name} of Pod ${pod.metadata?.name ?? ''} keeps crashing (\`krt dev logs ${pod.metadata?.name ?? ''}/${crashing.name}\`)`,
          );
      }
      if (phase === 'Failed' || phase === 'Cancelled' || phase === 'Succeeded' || phase === 'Interrupted') {
        throw new Error(`Run ${name} ended ${phase} (${run.status?.reason ?? ''}: ${run.status?.message ?? ''}) instead of becoming Ready`);
      }
      return phase === 'Ready';
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new DevError(
      `${error instanceof Error ? error.message : String(error)} (last phase: ${run?.status?.phase ?? 'none'}; see \`krt dev logs\`)`,
    );
  }
  if (run === undefined) throw new Error(`Run ${name} not read`);
  return run;
}

/**
 * A host file as a container path: runtimed opens `$KRUNTIMES_CONTAINER_ROOT/P` (the local
 * node keeps container roots under its state directory), so P climbs out of any container
 * root with more `..` than it is deep (path.join stops at `/`).
 */
export function hostPathInContainer(nodeDir: string, hostPath: string): string {
  const depth = nodeDir.split('/').filter((part) => part !== '').length + 16;
  return `/${'../'.repeat(depth)}${hostPath.replace(/^\/+/, '')}`;
}

async function createIfMissing(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
  }
}

function withNamespace(kubeconfig: string, namespace: string): string {
  const config = parse(kubeconfig) as { contexts: { context: Record<string, string> }[] };
  for (const context of config.contexts) context.context.namespace = namespace;
  return stringify(config);
}

/** What `up` needs from the host besides `npm ci`, each with what it is for. */
async function missingPrerequisites(): Promise<string[]> {
  const needed: [string, string][] = [
    ['openssl', "openssl (the control plane's and the gateway's certificates)"],
    ['python3', 'python3 (the Python Runtime Server)'],
    ['bash', 'bash (the Bash Runtime Server)'],
  ];
  // build.sh asks go for its version even when its cache is complete.
  if ((process.env.KRT_KUBE_BIN_DIR ?? '') === '')
    needed.push(['go', 'go (tools/kube-binaries/build.sh builds the control-plane binaries; or set KRT_KUBE_BIN_DIR)']);
  const found = await Promise.all(needed.map(async ([command]) => onPath(command)));
  return needed.filter((_, index) => found[index] !== true).map(([, what]) => what);
}

async function onPath(command: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir === '') continue;
    try {
      await access(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}
