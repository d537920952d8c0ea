import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_SCHEDULE_PLURAL } from '@kruntimes/api';
import type { RunSchedule } from '@kruntimes/api';
import { CliError, EXIT } from './exit-codes.ts';

/** RunSchedules of one namespace, as the kubeconfig's user. */
export class ScheduleApi {
  readonly namespace: string;
  readonly #api: CustomObjectsApi;

  constructor(config: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.#api = config.makeApiClient(CustomObjectsApi);
  }

  async get(name: string): Promise<RunSchedule> {
    try {
      return (await this.#api.getNamespacedCustomObject({ ...this.#target(), name })) as RunSchedule;
    } catch (error) {
      throw this.#notFound(error, name);
    }
  }

  async list(): Promise<RunSchedule[]> {
    return ((await this.#api.listNamespacedCustomObject(this.#target())) as { items: RunSchedule[] }).items;
  }

  /** JSON merge patch of the spec. */
  async patchSpec(name: string, spec: Partial<RunSchedule['spec']>): Promise<RunSchedule> {
    try {
      return (await this.#api.patchNamespacedCustomObject(
        { ...this.#target(), name, body: { spec } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )) as RunSchedule;
    } catch (error) {
      throw this.#notFound(error, name);
    }
  }

  #target(): { group: string; version: string; namespace: string; plural: string } {
    return { group: API_GROUP, version: API_VERSION, namespace: this.namespace, plural: RUN_SCHEDULE_PLURAL };
  }

  #notFound(error: unknown, name: string): unknown {
    return error instanceof ApiException && error.code === 404
      ? new CliError(EXIT.notFound, `RunSchedule "${name}" not found in namespace ${this.namespace}`, { cause: error })
      : error;
  }
}
