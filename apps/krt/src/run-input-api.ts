import { RUN_INPUT_PLURAL, API_GROUP, API_VERSION } from '@kruntimes/api';
import type { KubeConfig } from '@kubernetes/client-node';
import type { RunInput } from '@kruntimes/api';
import { ObjectClient } from '@kruntimes/run-client';
import { nextChange } from '@kruntimes/sdk';
import { CliError, EXIT } from './exit-codes.ts';

/** RunInputs of one namespace, as the kubeconfig's user. */
export class RunInputApi {
  readonly namespace: string;
  readonly #config: KubeConfig;
  readonly #inputs: ObjectClient<RunInput>;

  constructor(config: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.#config = config;
    this.#inputs = new ObjectClient<RunInput>(config, RUN_INPUT_PLURAL);
  }

  /** Creates it; undefined when one of that name exists already (AlreadyExists), so that the caller compares. */
  async create(body: RunInput): Promise<RunInput | undefined> {
    const created = await this.#inputs.create(this.namespace, body);
    return created.ok ? created.object : undefined;
  }

  async get(name: string): Promise<RunInput> {
    const input = await this.#inputs.get(this.namespace, name);
    if (input === undefined) throw new CliError(EXIT.notFound, `RunInput "${name}" not found in namespace "${this.namespace}"`);
    return input;
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
}
