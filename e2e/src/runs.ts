// The Runtimes, Runs and Pods of one test namespace, read and written as admin.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '@kruntimes/api';
import type { Run, RunSpec, Runtime, RuntimeSpec } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import { kruntimesClients, refusalError } from '@kruntimes/run-client';
import type { KruntimesClients } from '@kruntimes/run-client';
import { currentPhase, waitOutcome } from '@kruntimes/run-state';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { waitFor } from '@kruntimes/testing';

/** How long and how often the system's waits poll. */
export const WAIT = { timeoutMs: 90_000, intervalMs: 100 };

export class NamespaceObjects {
  readonly core: CoreV1Api;
  /** For tests that call the API as it is; this class's own reads and writes go through the typed clients. */
  readonly objects: CustomObjectsApi;
  readonly #clients: Pick<KruntimesClients, 'runs' | 'runtimes'>;
  readonly #namespace: string;

  constructor(admin: KubeConfig, namespace: string) {
    this.core = admin.makeApiClient(CoreV1Api);
    this.objects = admin.makeApiClient(CustomObjectsApi);
    this.#clients = kruntimesClients(admin);
    this.#namespace = namespace;
  }

  async createRuntime(name: string, spec: Partial<RuntimeSpec> & Pick<RuntimeSpec, 'language'>): Promise<Runtime> {
    const body: Runtime = { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: 'Runtime', metadata: { name }, spec: { ...spec } };
    const created = await this.#clients.runtimes.create(this.#namespace, body);
    if (!created.ok) throw refusalError(created);
    return created.object;
  }

  /** A function Run; `handler` like `main:handle` (Python) or `handle` (Bash). */
  async createFunctionRun(name: string, runtime: string, source: string, handler: string, spec: Partial<RunSpec> = {}): Promise<Run> {
    return this.#createRun(name, { runtime, source: { inline: source }, mode: { function: { handler } }, ...spec });
  }

  /** A task Run of inline source. */
  async createTaskRun(name: string, runtime: string, source: string, spec: Partial<RunSpec> = {}): Promise<Run> {
    return this.#createRun(name, { runtime, source: { inline: source }, mode: { task: {} }, ...spec });
  }

  async #createRun(name: string, spec: RunSpec): Promise<Run> {
    const body: Run = { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: 'Run', metadata: { name }, spec };
    const created = await this.#clients.runs.create(this.#namespace, body);
    if (!created.ok) throw refusalError(created);
    return created.object;
  }

  async getRun(name: string): Promise<Run> {
    const run = await this.#clients.runs.get(this.#namespace, name);
    if (run === undefined) throw new Error(`Run ${this.#namespace}/${name} not found`);
    return run;
  }

  async listRuns(): Promise<Run[]> {
    return this.#clients.runs.list(this.#namespace);
  }

  async listPods(labelSelector?: string): Promise<V1Pod[]> {
    const namespace = this.#namespace;
    return (await this.core.listNamespacedPod(labelSelector === undefined ? { namespace } : { namespace, labelSelector })).items;
  }

  /** The Pod a Run is assigned to (its runtimed is the owner). */
  async assignedPod(runName: string): Promise<V1Pod> {
    const pod = (await this.getRun(runName)).status?.assignedPod;
    if (pod === undefined) throw new Error(`Run ${runName} is not assigned to a Pod`);
    return this.core.readNamespacedPod({ namespace: this.#namespace, name: pod });
  }

  /** Deletes a Run; one that is already gone is not an error. */
  async deleteRun(name: string): Promise<void> {
    const deleted = await this.#clients.runs.delete(this.#namespace, name);
    if (!deleted.ok && deleted.reason === 'Conflict') throw refusalError(deleted);
  }

  /** Resolves once `count` Pods of the Runtime are Ready (runtimed serving). */
  async waitRuntimeReady(runtime: string, count: number): Promise<V1Pod[]> {
    return waitFor(
      `${count} ready Pods of Runtime ${runtime}`,
      async () => {
        const pods = await this.listPods(podLabelSelector(runtime));
        const ready = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined && isPodReady(pod));
        return ready.length >= count ? ready : undefined;
      },
      WAIT,
    );
  }

  async waitForRun(name: string, what: string, predicate: (run: Run) => boolean, timeoutMs: number): Promise<Run> {
    return waitFor(
      `Run ${name}: ${what}`,
      async () => {
        const run = await this.getRun(name);
        return predicate(run) ? run : undefined;
      },
      { timeoutMs, intervalMs: WAIT.intervalMs },
    );
  }

  /** Resolves with the Run once it is Ready; fails at once when it ends instead. */
  async waitReady(name: string): Promise<Run> {
    const ended = new AbortController();
    const probe = async (): Promise<Run | undefined> => {
      const run = await this.getRun(name);
      const phase = currentPhase(run);
      const outcome = waitOutcome(phase, 'ready');
      if (outcome === 'unreachable') {
        const why = `${run.status?.reason ?? ''}: ${run.status?.message ?? ''}`;
        ended.abort(new Error(`Run ${name} ended ${phase} (${why}) instead of becoming Ready`));
      }
      return outcome === 'satisfied' ? run : undefined;
    };
    return waitFor(`Run ${name}: Ready`, probe, { ...WAIT, signal: ended.signal }).catch((error: unknown) => {
      throw ended.signal.aborted ? (ended.signal.reason as Error) : error;
    });
  }

  /** One line per Run and per Pod: what a failed wait needs to be understood. */
  async describe(): Promise<string[]> {
    const runs = (await this.listRuns()).map(
      ({ metadata, status }) =>
        `Run ${metadata.name ?? ''}: ${status?.phase ?? 'Pending'} ${status?.reason ?? ''} ${status?.message ?? ''} pod=${status?.assignedPod ?? ''}`,
    );
    const pods = (await this.listPods()).map((pod) => {
      const containers = (pod.status?.containerStatuses ?? []).map((c) => {
        const waiting = c.state?.waiting?.reason === undefined ? '' : `(${c.state.waiting.reason} ${c.state.waiting.message ?? ''})`;
        return `${c.name}:${c.ready ? 'ready' : 'not-ready'}:${Object.keys(c.state ?? {}).join('')}${waiting}:restarts=${c.restartCount}`;
      });
      return `Pod ${pod.metadata?.name ?? ''}: ${pod.status?.phase ?? ''} ip=${pod.status?.podIP ?? ''} ${containers.join(' ')}`;
    });
    return [...runs, ...pods];
  }
}
