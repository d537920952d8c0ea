import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_GROUP, API_VERSION, DEFAULTS, RUNTIMED_TLS_MOUNT_PATH, RUN_PLURAL, runtimedTlsSecretName } from '@kruntimes/api';
import type { RetryPolicy, Run, RunSpec, RuntimeLanguage } from '@kruntimes/api';
import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
// The local node agent (a tool) runs the Runtime Pods as real processes, as it does for the local cluster.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { LocalNode } from '@kruntimes/local-node';
import { transition } from '@kruntimes/run-state';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { Cluster, NamespaceAccess, REPO_ROOT, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority, issueWorkloadCertificate } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';

export const WAIT = { timeoutMs: 60_000, intervalMs: 100 };
export const RUNTIME_SERVER_PORT = 7450;
export const GATEWAY_HOST = 'gateway.kruntimes.test';

const node = process.execPath;
const IMAGES = {
  'kruntimes/runtimed': { entrypoint: [node, join(REPO_ROOT, 'apps/runtimed/src/main.ts')] },
  'kruntimes/runtime-server-python': { entrypoint: [node, join(REPO_ROOT, 'apps/runtime-server-python/src/main.ts')] },
  'kruntimes/runtime-server-bash': { entrypoint: [node, join(REPO_ROOT, 'apps/runtime-server-bash/src/main.ts')] },
  // Plays the Runtime Server's side of waiting for input and records what runtimed sent (input-wait tests).
  'kruntimes/runtime-server-recording': { entrypoint: [node, join(REPO_ROOT, 'apps/runtimed/test/recording-runtime-server.ts')] },
};

/**
 * One test namespace with a local node that runs Runtime Pods (runtimed plus a Runtime
 * Server, real processes on 127.0.0.x) and the RBAC runtimed needs; the test itself
 * plays the scheduler by binding Runs through the status subresource.
 */
export class RuntimeEnvironment {
  readonly cluster: Cluster;
  readonly admin: KubeConfig;
  readonly core: CoreV1Api;
  readonly objects: CustomObjectsApi;
  readonly namespace: TestNamespace;
  readonly node: LocalNode;
  /** The internal CA of this environment (what the controller-manager holds in a cluster); `caPem` is what the gateway trusts. */
  readonly tls: { ca: CertificateAuthority; caPem: string };
  readonly #stateDir: string;

  private constructor(cluster: Cluster, namespace: TestNamespace, node: LocalNode, stateDir: string, ca: CertificateAuthority) {
    this.cluster = cluster;
    this.admin = cluster.kubeConfig();
    this.core = this.admin.makeApiClient(CoreV1Api);
    this.objects = this.admin.makeApiClient(CustomObjectsApi);
    this.namespace = namespace;
    this.node = node;
    this.tls = { ca, caPem: ca.certPem };
    this.#stateDir = stateDir;
  }

  /** In the integration run, `cluster` is the one the jest global setup started. */
  static async start(prefix: string, cluster: Cluster = Cluster.fromEnvironment()): Promise<RuntimeEnvironment> {
    const admin = cluster.kubeConfig();
    const namespace = await cluster.createNamespace({ prefix, waitForDefaultServiceAccount: true });
    // In a Role, as the chart's RoleBinding grants them: its own Namespace readable, no other.
    await new NamespaceAccess(cluster, namespace.name).grantServiceAccount('default', 'runtimed', RUNTIMED_ROLE_RULES, {
      onlyThisNamespace: true,
    });
    const stateDir = await mkdtemp(join(tmpdir(), 'runtimed-test-'));
    const localNode = new LocalNode(
      admin,
      {
        nodeName: namespace.name,
        stateDir,
        namespaces: [namespace.name],
        images: IMAGES,
        crashLoopBackoff: { initialMs: 100, maxMs: 1_000 },
        kubeletServer: cluster.info.kubeletServer,
      },
      { deleteNodeOnStop: true },
    );
    await localNode.start();
    return new RuntimeEnvironment(cluster, namespace, localNode, stateDir, await createCertificateAuthority());
  }

  get name(): string {
    return this.namespace.name;
  }

  /** Everything the local node keeps for this environment's Pods: volumes, workspaces, logs. */
  get stateDir(): string {
    return this.#stateDir;
  }

  async stop(): Promise<void> {
    await this.node.stop({ graceMs: 3_000 });
    await rm(this.#stateDir, { recursive: true, force: true });
    await this.namespace.delete();
  }

  /** A Runtime Pod as the Runtime's Deployment would make it; resolves once it is Ready. */
  async createRuntimePod(
    podName: string,
    language: RuntimeLanguage,
    runtime = 'rt',
    extraEnv: Record<string, string> = {},
    serverImage = `kruntimes/runtime-server-${language}:dev`,
  ): Promise<V1Pod> {
    const fieldEnv = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });
    const workspaces = { name: 'workspaces', mountPath: '/var/lib/kruntimes/workspaces' };
    // The workload certificate, as the Runtime's Pod template mounts it (KRT_TLS_DIR's default).
    const tls = { name: 'runtimed-tls', mountPath: RUNTIMED_TLS_MOUNT_PATH, readOnly: true };
    await this.ensureTlsSecret(runtime);
    await this.core.createNamespacedPod({
      namespace: this.name,
      body: {
        metadata: { name: podName, labels: { 'kruntimes.io/runtime': runtime } },
        spec: {
          volumes: [
            { name: 'workspaces', emptyDir: {} },
            { name: 'runtimed-tls', secret: { secretName: runtimedTlsSecretName(runtime) } },
          ],
          terminationGracePeriodSeconds: 5,
          containers: [
            {
              name: 'runtimed',
              image: 'kruntimes/runtimed:dev',
              env: [
                fieldEnv('POD_NAME', 'metadata.name'),
                fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
                fieldEnv('POD_UID', 'metadata.uid'),
                fieldEnv('POD_IP', 'status.podIP'),
                { name: 'RUNTIME_NAME', value: runtime },
                { name: 'RUNTIME_LANGUAGE', value: language },
                // Each local Pod has its own 127.0.0.x: its "localhost" is the Pod IP.
                { name: 'KRT_RUNTIME_SERVER', value: `$(POD_IP):${RUNTIME_SERVER_PORT}` },
                { name: 'KRT_GATEWAY_HOST', value: GATEWAY_HOST },
                { name: 'KRT_CANCEL_GRACE_SECONDS', value: '2' },
                ...Object.entries(extraEnv).map(([name, value]) => ({ name, value })),
              ],
              ports: [
                { name: 'grpc', containerPort: DEFAULTS.runtimedGrpcPort },
                { name: 'peer', containerPort: DEFAULTS.runtimedPeerPort },
                { name: 'health', containerPort: DEFAULTS.runtimedHealthPort },
              ],
              readinessProbe: { grpc: { port: DEFAULTS.runtimedHealthPort }, periodSeconds: 1, failureThreshold: 1 },
              volumeMounts: [workspaces, tls],
            },
            {
              name: 'runtime-server',
              image: serverImage,
              args: ['--listen', `$(POD_IP):${RUNTIME_SERVER_PORT}`],
              env: [fieldEnv('POD_IP', 'status.podIP')],
              volumeMounts: [workspaces],
            },
          ],
        },
      },
    });
    return waitFor(
      `Runtime Pod ${podName} Ready`,
      async () => {
        const pod = await this.core.readNamespacedPod({ namespace: this.name, name: podName });
        return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? pod : undefined;
      },
      WAIT,
    );
  }

  /** The `<runtime>-runtimed-tls` Secret as the controller-manager keeps it (created once per Runtime). */
  async ensureTlsSecret(runtime: string): Promise<void> {
    const leaf = await issueWorkloadCertificate(this.tls.ca, { namespace: this.name, runtime });
    const base64 = (pem: string) => Buffer.from(pem, 'utf8').toString('base64');
    try {
      await this.core.createNamespacedSecret({
        namespace: this.name,
        body: {
          metadata: { name: runtimedTlsSecretName(runtime), labels: { 'kruntimes.io/runtime': runtime } },
          type: 'kubernetes.io/tls',
          data: { 'ca.crt': base64(this.tls.caPem), 'tls.crt': base64(leaf.certPem), 'tls.key': base64(leaf.keyPem) },
        },
      });
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 409)) throw error;
    }
  }

  async createRun(name: string, spec: RunSpec): Promise<Run> {
    return (await this.objects.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: 'Run', metadata: { name }, spec },
    })) as Run;
  }

  /**
   * A Bash task on `pod` that starts a background `sleep 300` and waits for it, so that it
   * runs until stopped; resolves with the PIDs it wrote into `scratchDir` (the child's, then
   * the shell's) once it runs: what a test kills its owner under and checks stopped.
   */
  async startLongTask(name: string, pod: V1Pod, scratchDir: string, retryPolicy: RetryPolicy): Promise<number[]> {
    const pidFile = join(scratchDir, `${name}-pids`);
    await this.createRun(name, {
      runtime: 'rt',
      source: { inline: 'sleep 300 &\necho $! > "$PID_FILE"\necho $$ >> "$PID_FILE"\nwait\n' },
      mode: { task: {} },
      env: [{ name: 'PID_FILE', value: pidFile }],
      retryPolicy,
    });
    await this.bind(name, pod);
    return waitFor(
      `${name} to write its PIDs`,
      async () => {
        const numbers = (await readFile(pidFile, 'utf8').catch(() => ''))
          .split('\n')
          .filter((line) => line !== '')
          .map(Number);
        return numbers.length === 2 ? numbers : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
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

  async patchRunSpec(name: string, spec: Partial<RunSpec>): Promise<void> {
    const run = await this.getRun(name);
    await this.objects.replaceNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      name,
      body: { ...run, spec: { ...run.spec, ...spec } },
    });
  }

  async deleteRun(name: string): Promise<void> {
    await this.objects.deleteNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      name,
    });
  }

  /** What the scheduler does: Pending -> Scheduled on the Pod, through the state machine. */
  async bind(name: string, pod: V1Pod): Promise<Run> {
    const run = await this.getRun(name);
    const result = transition({
      run,
      event: { type: 'Bind', pod: pod.metadata?.name ?? '', podUID: pod.metadata?.uid ?? '' },
      writer: 'scheduler',
      now: new Date().toISOString(),
    });
    if (!result.ok) throw result.error;
    return (await this.objects.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      namespace: this.name,
      plural: RUN_PLURAL,
      name,
      body: { ...run, status: result.status },
    })) as Run;
  }

  async waitForRun(name: string, what: string, predicate: (run: Run) => boolean, timeoutMs = WAIT.timeoutMs): Promise<Run> {
    return waitFor(
      `Run ${name}: ${what}`,
      async () => {
        const run = await this.getRun(name);
        return predicate(run) ? run : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  async waitForRunGone(name: string): Promise<void> {
    await waitFor(
      `Run ${name} gone`,
      async () => {
        try {
          await this.getRun(name);
          return undefined;
        } catch (error) {
          if (error instanceof ApiException && error.code === 404) return true;
          throw error;
        }
      },
      WAIT,
    );
  }

  /** Waits until the local clock passed an RFC 3339 time (a retry backoff's notBefore). */
  async waitForTime(time: string): Promise<void> {
    const at = Date.parse(time);
    if (Number.isNaN(at)) throw new Error(`not a time: ${time}`);
    await waitFor(`time ${time}`, () => Promise.resolve(Date.now() >= at ? true : undefined), {
      timeoutMs: Math.max(0, at - Date.now()) + 5_000,
      intervalMs: 100,
    });
  }

  /** The JSON log lines of one container of a Pod, parsed. */
  async logs(podName: string, container: string): Promise<Record<string, unknown>[]> {
    const text = await readFile(this.node.logFile(this.name, podName, container), 'utf8');
    return text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}
