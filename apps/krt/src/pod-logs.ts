import { Writable } from 'node:stream';
import { ApiException, CoreV1Api, Log } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { parseRuntimedLogLine } from '@kruntimes/api';
import type { RunLogRecord } from '@kruntimes/api';
import { CONTAINERS, podLabelSelector } from '@kruntimes/runtime-workload';
import { CliError, EXIT, apiStatusMessage } from './exit-codes.ts';

/**
 * runtimed's log of the Runtime Pods, read through the API server's Pod log API with the
 * user's own credentials (RBAC on `pods` and `pods/log` decides), as Run log records.
 */
export class RuntimedLogs {
  readonly #config: KubeConfig;
  readonly #core: CoreV1Api;
  readonly #namespace: string;

  constructor(config: KubeConfig, namespace: string) {
    this.#config = config;
    this.#core = config.makeApiClient(CoreV1Api);
    this.#namespace = namespace;
  }

  /** The Runtime's Pods that exist now (a deleted Pod's logs went with it). */
  async pods(runtime: string): Promise<V1Pod[]> {
    try {
      return (await this.#core.listNamespacedPod({ namespace: this.#namespace, labelSelector: podLabelSelector(runtime) })).items;
    } catch (error) {
      throw refused(error, `list Pods in namespace "${this.#namespace}"`);
    }
  }

  /**
   * Every Run record of one Pod's runtimed log (since `sinceSeconds`, if given): the log of
   * the runtimed that ran before a restart first (what it wrote is there), then the current one.
   */
  async read(pod: string, sinceSeconds?: number): Promise<{ previous: RunLogRecord[]; current: RunLogRecord[] }> {
    return { previous: await this.readPrevious(pod, sinceSeconds), current: parseLines(await this.#readLog(pod, false, sinceSeconds)) };
  }

  /** Only what a runtimed before the last restart wrote (the current log is followed instead). */
  async readPrevious(pod: string, sinceSeconds?: number): Promise<RunLogRecord[]> {
    return parseLines(await this.#readLog(pod, true, sinceSeconds));
  }

  async #readLog(pod: string, previous: boolean, sinceSeconds: number | undefined): Promise<string> {
    try {
      return await this.#core.readNamespacedPodLog({
        namespace: this.#namespace,
        name: pod,
        container: CONTAINERS.runtimed,
        ...(previous ? { previous } : {}),
        ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
      });
    } catch (error) {
      // Gone, or (previous) no container ran before this one: nothing to read.
      if (error instanceof ApiException && (error.code === 404 || (previous && error.code === 400))) return '';
      throw refused(error, `read the logs of Pod "${pod}" (pods/log) in namespace "${this.#namespace}"`);
    }
  }

  /**
   * Follows one Pod's runtimed log from its start (or `sinceSeconds` back), each Run record
   * to `onRecord`, until `signal` aborts or the log ends (the container stopped). A Pod
   * that is gone has nothing to follow: it resolves at once.
   */
  async follow(pod: string, onRecord: (record: RunLogRecord) => void, signal: AbortSignal, sinceSeconds?: number): Promise<void> {
    let partial = '';
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const record of parseLines(lines.join('\n'))) onRecord(record);
        done();
      },
    });
    const finished = new Promise<void>((resolve) => {
      sink.once('finish', resolve);
      sink.once('close', resolve);
    });
    // client-node pipes the response into `sink`; an aborted or broken response errors that
    // source, which nothing else listens to: end the follow instead of crashing.
    sink.once('pipe', (source: NodeJS.ReadableStream) => {
      source.once('error', () => sink.end());
    });
    let request: AbortController;
    try {
      request = await new Log(this.#config).log(this.#namespace, pod, CONTAINERS.runtimed, sink, {
        follow: true,
        ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
      });
    } catch (error) {
      // The Pod is gone (or not there yet): nothing to follow on it.
      if (error instanceof ApiException && (error.code === 404 || error.code === 400)) return;
      throw refused(error, `follow the logs of Pod "${pod}" (pods/log) in namespace "${this.#namespace}"`);
    }
    const stop = (): void => {
      request.abort();
      sink.end();
    };
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    try {
      await finished;
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }
}

function parseLines(text: string): RunLogRecord[] {
  const records: RunLogRecord[] = [];
  for (const line of text.split('\n')) {
    const record = parseRuntimedLogLine(line);
    if (record !== undefined) records.push(record);
  }
  return records;
}

/** A refusal of the API server as the user's error: which right is missing. */
function refused(error: unknown, what: string): unknown {
  if (error instanceof ApiException && (error.code === 401 || error.code === 403)) {
    return new CliError(EXIT.unauthorized, `the API server refused to ${what}: ${apiStatusMessage(error)}`, { cause: error });
  }
  return error;
}
