import type { KubeConfig } from '@kubernetes/client-node';
import { RUN_SCHEDULE_PLURAL } from '@kruntimes/api';
import type { RunSchedule } from '@kruntimes/api';
import { ObjectClient, refusalError } from '@kruntimes/run-client';
import { CliError, EXIT } from './exit-codes.ts';

/** RunSchedules of one namespace, as the kubeconfig's user. One that is not there is a CliError (EXIT.notFound). */
export class ScheduleApi {
  readonly namespace: string;
  readonly #schedules: ObjectClient<RunSchedule>;

  constructor(config: KubeConfig, namespace: string) {
    this.namespace = namespace;
    this.#schedules = new ObjectClient<RunSchedule>(config, RUN_SCHEDULE_PLURAL);
  }

  async get(name: string): Promise<RunSchedule> {
    const schedule = await this.#schedules.get(this.namespace, name);
    if (schedule === undefined) throw this.#notFound(name);
    return schedule;
  }

  async list(): Promise<RunSchedule[]> {
    return this.#schedules.list(this.namespace);
  }

  /** JSON merge patch of the spec. */
  async patchSpec(name: string, spec: Partial<RunSchedule['spec']>): Promise<RunSchedule> {
    const patched = await this.#schedules.mergePatch(this.namespace, name, { spec });
    if (!patched.ok) throw patched.reason === 'NotFound' ? this.#notFound(name, patched.error) : refusalError(patched);
    return patched.object;
  }

  #notFound(name: string, cause?: unknown): CliError {
    return new CliError(
      EXIT.notFound,
      `RunSchedule "${name}" not found in namespace ${this.namespace}`,
      cause === undefined ? {} : { cause },
    );
  }
}
