// A typed client for kruntimes.io Runs over CustomObjectsApi, for the API conformance
// tests. Every call goes to the real API server; nothing here interprets the answers.
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunSpec, RunStatus } from '@kruntimes/api';

export interface RunList {
  items: Run[];
  metadata: { resourceVersion: string };
}

export class RunClient {
  readonly namespace: string;
  readonly #api: CustomObjectsApi;

  constructor(config: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.#api = config.makeApiClient(CustomObjectsApi);
  }

  get path(): string {
    return `/apis/${API_GROUP}/${API_VERSION}/namespaces/${this.namespace}/${RUN_PLURAL}`;
  }

  async create(name: string, spec: RunSpec, metadata: Partial<Run['metadata']> = {}): Promise<Run> {
    const body: Run = { apiVersion: API_GROUP_VERSION, kind: 'Run', metadata: { ...metadata, name }, spec };
    return (await this.#api.createNamespacedCustomObject({ ...this.#target(), body })) as Run;
  }

  async get(name: string): Promise<Run> {
    return (await this.#api.getNamespacedCustomObject({ ...this.#target(), name })) as Run;
  }

  async list(): Promise<RunList> {
    return (await this.#api.listNamespacedCustomObject(this.#target())) as RunList;
  }

  /** PUT of the main resource: spec and metadata; the API server ignores status here. */
  async replace(run: Run): Promise<Run> {
    return (await this.#api.replaceNamespacedCustomObject({ ...this.#target(), name: nameOf(run), body: run })) as Run;
  }

  /** PUT of the status subresource: status only; the API server ignores spec here. */
  async replaceStatus(run: Run): Promise<Run> {
    return (await this.#api.replaceNamespacedCustomObjectStatus({ ...this.#target(), name: nameOf(run), body: run })) as Run;
  }

  /** Read-modify-write of status with the object's resourceVersion. */
  async updateStatus(name: string, status: RunStatus): Promise<Run> {
    const run = await this.get(name);
    return this.replaceStatus({ ...run, status });
  }

  async delete(name: string): Promise<void> {
    await this.#api.deleteNamespacedCustomObject({ ...this.#target(), name });
  }

  #target() {
    return { group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: RUN_PLURAL };
  }
}

function nameOf(run: Run): string {
  const { name } = run.metadata;
  if (name === undefined) throw new Error('Run without metadata.name');
  return name;
}

/** The Kubernetes Status carried by a failed API call. */
export interface ApiStatus {
  code: number;
  reason: string;
  message: string;
}

export function apiStatus(error: unknown): ApiStatus {
  if (!(error instanceof ApiException)) throw error;
  const body: unknown = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
  const status = body as Partial<ApiStatus> | null;
  return { code: error.code, reason: status?.reason ?? '', message: status?.message ?? '' };
}

/** Awaits a call that must fail, and returns the API server's Status for it. */
export async function rejection(call: Promise<unknown>): Promise<ApiStatus> {
  try {
    await call;
  } catch (error) {
    return apiStatus(error);
  }
  throw new Error('expected the API server to reject the request, but it accepted it');
}

/** A valid task Run spec; tests override the fields they exercise. */
export function taskSpec(overrides: Partial<RunSpec> = {}): RunSpec {
  return {
    runtime: 'python',
    source: { inline: 'print("hello")' },
    mode: { task: { args: ['a'] } },
    env: [{ name: 'GREETING', value: 'hello' }],
    timeout: '90s',
    retryPolicy: { maxAttempts: 1, retrySafe: false },
    ...overrides,
  };
}
