import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_INPUT_PLURAL } from '@kruntimes/api';
import type { RunInput } from '@kruntimes/api';
import { nextChange } from '@kruntimes/sdk';

/** RunInputs of one namespace, as the kubeconfig's user. */
export class RunInputApi {
  readonly namespace: string;
  readonly #config: KubeConfig;
  readonly #api: CustomObjectsApi;

  constructor(config: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.#config = config;
    this.#api = config.makeApiClient(CustomObjectsApi);
  }

  /** Creates it; undefined when one of that name exists already (409), so that the caller compares. */
  async create(body: RunInput): Promise<RunInput | undefined> {
    try {
      return (await this.#api.createNamespacedCustomObject({ ...this.#target(), body })) as RunInput;
    } catch (error) {
      if (error instanceof ApiException && error.code === 409) return undefined;
      throw error;
    }
  }

  async get(name: string): Promise<RunInput> {
    return (await this.#api.getNamespacedCustomObject({ ...this.#target(), name })) as RunInput;
  }

  async nextChange(name: string, resourceVersion: string, timeoutMs: number): Promise<'changed' | 'ended' | 'timeout'> {
    return nextChange(
      this.#config,
      `/apis/${API_GROUP}/${API_VERSION}/namespaces/${this.namespace}/${RUN_INPUT_PLURAL}`,
      name,
      resourceVersion,
      timeoutMs,
    );
  }

  #target(): { group: string; version: string; namespace: string; plural: string } {
    return { group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: RUN_INPUT_PLURAL };
  }
}
