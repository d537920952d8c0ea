import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiException, CoreV1Api, KubernetesObjectApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { ClusterInfoError } from './errors.ts';
import { kubeConfigFor, kubeconfigYaml } from './kubeconfig.ts';
import { ADMIN_USER } from './users.ts';
import type { User } from './users.ts';
import { waitFor } from './wait.ts';

/** Everything a client needs to reach a control plane; serialised to `cluster.json`. */
export interface ClusterInfo {
  server: string;
  caPem: string;
  etcdUrl: string;
  /** State directory of the control plane; removed when it stops. */
  dir: string;
  /** The Service ClusterIP range: allocated from, never dialled. */
  serviceClusterIpRange: string;
  users: User[];
  /**
   * What a local node agent (tools/local-node) serves its kubelet endpoint with: a serving
   * certificate for its InternalIP that kube-apiserver verifies, and the CA of the client
   * certificate kube-apiserver presents (logs). Files in `dir`.
   */
  kubeletServer: { certFile: string; keyFile: string; clientCaFile: string };
}

/** Set by the jest global setup for the test files: path of the running cluster's `cluster.json`. */
export const CLUSTER_INFO_ENV = 'KRUNTIMES_TEST_CLUSTER';

export interface CreateNamespaceOptions {
  /** Readable part of the generated name (lowercased, trimmed to fit). */
  prefix?: string;
  /**
   * Wait until kube-controller-manager has created the `default` ServiceAccount: Pods
   * cannot be created in the namespace before that.
   */
  waitForDefaultServiceAccount?: boolean;
  labels?: Record<string, string>;
}

export interface TestNamespace {
  name: string;
  /** Deletes the namespace without waiting for it to be finalized. */
  delete(): Promise<void>;
}

/** A client's handle to a running control plane: per-user kubeconfigs and namespaces. */
export class Cluster {
  readonly info: ClusterInfo;

  constructor(info: ClusterInfo) {
    this.info = info;
  }

  /** The cluster started by the jest global setup of this test run. */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env): Cluster {
    const file = env[CLUSTER_INFO_ENV];
    if (file === undefined || file === '') {
      throw new ClusterInfoError(
        `${CLUSTER_INFO_ENV} is not set: run this test through a jest config whose globalSetup is @kruntimes/testing/jest-global-setup`,
      );
    }
    try {
      return new Cluster(JSON.parse(readFileSync(file, 'utf8')) as ClusterInfo);
    } catch (error) {
      throw new ClusterInfoError(`cannot read the cluster info file ${file}`, { cause: error });
    }
  }

  get server(): string {
    return this.info.server;
  }

  user(name: string): User {
    const user = this.info.users.find((u) => u.name === name);
    if (user === undefined) throw new Error(`no user ${name}; users: ${this.info.users.map((u) => u.name).join(', ')}`);
    return user;
  }

  /** A fresh KubeConfig authenticating as `user` (default: the system:masters admin). */
  kubeConfig(user: string = ADMIN_USER): KubeConfig {
    return kubeConfigFor({ server: this.info.server, caPem: this.info.caPem, user, token: this.user(user).token });
  }

  /**
   * Writes `<user>.kubeconfig` for every named user into `dir` (not for the `system:`
   * identities of the control plane's own components); returns user name -> path.
   */
  async writeKubeconfigs(dir: string): Promise<Record<string, string>> {
    await mkdir(dir, { recursive: true });
    const paths: Record<string, string> = {};
    for (const user of this.info.users.filter((u) => !u.name.startsWith('system:'))) {
      const path = join(dir, `${user.name}.kubeconfig`);
      const yaml = kubeconfigYaml({ server: this.info.server, caPem: this.info.caPem, user: user.name, token: user.token });
      await writeFile(path, yaml, { mode: 0o600 });
      paths[user.name] = path;
    }
    return paths;
  }

  /** A uniquely named namespace, created by the admin; one per test keeps tests independent. */
  async createNamespace(options: CreateNamespaceOptions = {}): Promise<TestNamespace> {
    const config = this.kubeConfig();
    const core = config.makeApiClient(CoreV1Api);
    const name = namespaceName(options.prefix ?? 'test');
    await KubernetesObjectApi.makeApiClient(config).create({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { 'kruntimes.io/test': 'true', ...options.labels } },
    });
    if (options.waitForDefaultServiceAccount === true) {
      await waitFor(
        `ServiceAccount ${name}/default (created by kube-controller-manager)`,
        async () => {
          try {
            return await core.readNamespacedServiceAccount({ namespace: name, name: 'default' });
          } catch (error) {
            if (error instanceof ApiException && error.code === 404) return undefined;
            throw error;
          }
        },
        // The first namespace of a run may wait for kube-controller-manager's own start.
        { timeoutMs: 60_000, intervalMs: 100 },
      );
    }
    return {
      name,
      delete: async () => {
        try {
          await core.deleteNamespace({ name });
        } catch (error) {
          if (!(error instanceof ApiException && error.code === 404)) throw error;
        }
        // Cluster-scoped grants made for this namespace's ServiceAccounts (NamespaceAccess).
        const rbac = config.makeApiClient(RbacAuthorizationV1Api);
        const labelSelector = `${TEST_NAMESPACE_LABEL}=${name}`;
        await rbac.deleteCollectionClusterRoleBinding({ labelSelector });
        await rbac.deleteCollectionClusterRole({ labelSelector });
      },
    };
  }
}

/** On the cluster-scoped objects made for one test namespace, removed with it. */
export const TEST_NAMESPACE_LABEL = 'kruntimes.io/test-namespace';

/** `prefix-xxxxxx`: a DNS label (63 bytes) with 6 random hex characters. */
export function namespaceName(prefix: string): string {
  const clean =
    prefix
      .toLowerCase()
      .replaceAll(/[^a-z0-9-]+/g, '-')
      .replaceAll(/^-+|-+$/g, '')
      .slice(0, 50) || 'test';
  return `${clean.replace(/-+$/, '')}-${randomBytes(3).toString('hex')}`;
}
