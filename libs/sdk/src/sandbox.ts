import { EventEmitter } from 'node:events';
import { Agent } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, DEFAULTS, RUN_PLURAL } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { kruntimesClients, refusalError } from '@kruntimes/run-client';
import type { KruntimesClients } from '@kruntimes/run-client';
import { invokeFunction } from './invoke.ts';
import { nextChange } from './watch-change.ts';
import type { InvocationResult } from './invoke.ts';
import {
  SANDBOX_DEFAULT_IDLE_TIMEOUT_SECONDS,
  SANDBOX_GENERATE_NAME,
  SANDBOX_HANDLER,
  SANDBOX_SOURCE,
  SandboxError,
  cancelFinished,
  decideRuntimeCheck,
  sandboxState,
  toolError,
} from './sandbox-decisions.ts';

export interface SandboxOptions {
  /** The user's kubeconfig: the Run is created, watched and deleted as its current user. */
  kubeConfig: KubeConfig;
  namespace: string;
  /** A Python Runtime; `runs: 1` for a sandbox that owns its Pod. */
  runtime: string;
  /** Refuse (SandboxError RuntimeNotExclusive, nothing created) instead of warning when the Runtime's `runs` is not 1. */
  exclusive?: boolean | undefined;
  /** Bearer token for the gateway; default: the kubeconfig user's token. Never logged. */
  token?: string | undefined;
  /** `spec.mode.function.idleTimeoutSeconds`: the sandbox ends itself after this long without a tool call. Default 600. */
  idleTimeoutSeconds?: number | undefined;
  /** `spec.mode.function.invocationTimeoutSeconds`; an exec's time limit must fit in it. Default: the platform's (60). */
  invocationTimeoutSeconds?: number | undefined;
  /** `spec.ttlSecondsAfterFinished` of the Run (how long an ended sandbox Run stays to be looked at). */
  ttlSecondsAfterFinished?: number | undefined;
  labels?: Record<string, string> | undefined;
  /** Bound of start()'s wait for Ready. Default 120 s. */
  readyTimeoutMs?: number | undefined;
  /** Bound of close()'s and cancel()'s wait until the Run is gone / ended. Default 60 s. */
  endTimeoutMs?: number | undefined;
  /**
   * Reach the gateway at this origin (`https://host:port`) with this CA instead of the Run's
   * `status.endpoint` (outside the cluster, where the endpoint's host does not resolve);
   * the path (namespace, Runtime, Run UID) always comes from the endpoint.
   */
  gateway?: { url: string; caPem?: string | undefined } | undefined;
}

export interface ToolCallOptions {
  invocationId?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface ExecOptions extends ToolCallOptions {
  /** The command's own time limit (default 30 s; at most the invocation timeout minus 2 s). */
  timeoutSeconds?: number | undefined;
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
}

export interface WriteFileResult {
  path: string;
  bytes: number;
}

export interface ReadFileResult {
  path: string;
  content: string;
  encoding: 'utf-8' | 'base64';
  bytes: number;
}

export interface FileEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink';
  size: number;
}

export interface ListFilesResult {
  path: string;
  entries: FileEntry[];
  truncated: boolean;
}

export interface SandboxWarning {
  code: 'RuntimeNotExclusive' | 'RuntimeUnreadable';
  message: string;
}

const READY_TIMEOUT_MS = 120_000;
const END_TIMEOUT_MS = 60_000;
/** After a watch that could not start or closed early, so that the wait loop cannot spin. */
const REWATCH_PAUSE_MS = 500;

type State = 'new' | 'starting' | 'ready' | 'ended';

/**
 * An agent's sandbox: a function Run of the stock sandbox handler (`kruntimes_sandbox`) on
 * a Python Runtime, called as tools over one reused HTTPS connection.
 *
 * ```ts
 * const sandbox = new Sandbox({ kubeConfig, namespace: 'agents', runtime: 'sandbox' });
 * sandbox.on('warning', (warning) => console.warn(warning.message));
 * await sandbox.start();
 * try { await sandbox.exec('ls -l'); } finally { await sandbox.close(); }
 * ```
 *
 * start() reads the Runtime (a `runs` other than 1 is the event 'warning', or with
 * `exclusive` the SandboxError RuntimeNotExclusive, nothing created), creates the Run
 * (generateName `sandbox-`, idle timeout 600 s unless set) and waits, through a watch and
 * bounded, until it is Ready. Tool calls are invokes: no retry, InvocationError (a
 * SandboxToolError when the handler refused: `kind` PathOutsideWorkspace, InvalidToolCall,
 * ExecTimeout) or InvocationTransportError with `requestMayHaveBeenSent` exact; one at a
 * time (a Run serves one invocation at a time): a concurrent call waits for the connection,
 * its timeout running. close()
 * deletes the Run and waits until it is gone (its workspace removed); cancel() ends it
 * Cancelled and leaves it to its TTL. Without a 'warning' listener warnings go to
 * process.emitWarning.
 */
export class Sandbox extends EventEmitter<{ warning: [SandboxWarning] }> {
  readonly namespace: string;
  readonly runtime: string;
  readonly #options: SandboxOptions;
  readonly #clients: Pick<KruntimesClients, 'runs' | 'runtimes'>;
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  #state: State = 'new';
  #run: Run | undefined;
  #token: string | undefined;

  constructor(options: SandboxOptions) {
    super();
    this.#options = options;
    this.namespace = options.namespace;
    this.runtime = options.runtime;
    this.#clients = kruntimesClients(options.kubeConfig);
  }

  /** The sandbox Run as last seen (undefined before start() created it). */
  get run(): Run | undefined {
    return this.#run;
  }

  get name(): string | undefined {
    return this.#run?.metadata.name;
  }

  /** Checks the Runtime, creates the Run and waits until it is Ready. On failure after the create, the Run is deleted. */
  async start(): Promise<this> {
    if (this.#state !== 'new') throw new SandboxError('Closed', 'start() was already called on this sandbox', this.name);
    this.#state = 'starting';
    try {
      this.#token = this.#options.token ?? (await bearerToken(this.#options.kubeConfig));
      await this.#checkRuntime();
      this.#run = await this.#create();
    } catch (error) {
      this.#state = 'ended';
      this.#agent.destroy();
      throw error;
    }
    try {
      this.#run = await this.#waitReady();
      this.#state = 'ready';
      return this;
    } catch (error) {
      try {
        await this.close();
      } catch (closeError) {
        throw new AggregateError([error, closeError], `${(error as Error).message}; deleting the sandbox Run failed too`);
      }
      throw error;
    }
  }

  /** A shell command (`/bin/sh -c`) in the workspace. */
  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    return (await this.call({ tool: 'exec', command, ...timeoutOf(options) }, options)) as ExecResult;
  }

  /** A Python snippet (`python3 -c`) in the workspace. */
  async execPython(code: string, options: ExecOptions = {}): Promise<ExecResult> {
    return (await this.call({ tool: 'exec', python: code, ...timeoutOf(options) }, options)) as ExecResult;
  }

  /** Writes a file (parents created): a string as UTF-8, bytes as they are. */
  async writeFile(path: string, content: string | Uint8Array, options: ToolCallOptions = {}): Promise<WriteFileResult> {
    const payload =
      typeof content === 'string'
        ? { tool: 'write_file', path, content, encoding: 'utf-8' }
        : { tool: 'write_file', path, content: Buffer.from(content).toString('base64'), encoding: 'base64' };
    return (await this.call(payload, options)) as WriteFileResult;
  }

  /** Reads a file: as text (`utf-8`, refused when it is not) or `base64`. */
  async readFile(path: string, options: ToolCallOptions & { encoding?: 'utf-8' | 'base64' } = {}): Promise<ReadFileResult> {
    return (await this.call({ tool: 'read_file', path, encoding: options.encoding ?? 'utf-8' }, options)) as ReadFileResult;
  }

  async listFiles(path = '.', options: ToolCallOptions = {}): Promise<ListFilesResult> {
    return (await this.call({ tool: 'list_files', path }, options)) as ListFilesResult;
  }

  /** One tool call, the payload as the handler takes it; resolves with the handler's result. */
  async call(payload: Record<string, unknown>, options: ToolCallOptions = {}): Promise<unknown> {
    return (await this.invoke(payload, options)).result;
  }

  /** One tool call with the whole invocation answer (invocation ID, attempt, status). */
  async invoke(payload: Record<string, unknown>, options: ToolCallOptions = {}): Promise<InvocationResult> {
    const run = this.#run;
    const endpoint = run?.status?.endpoint;
    if (this.#state !== 'ready' || endpoint === undefined || this.#token === undefined) {
      throw new SandboxError(this.#state === 'ended' ? 'Closed' : 'NotStarted', `the sandbox is ${this.#state}, not ready`, this.name);
    }
    const gateway = this.#options.gateway;
    const invocationTimeoutSeconds = run?.spec.mode.function?.invocationTimeoutSeconds ?? DEFAULTS.invocationTimeoutSeconds;
    try {
      return await invokeFunction({
        url: gateway === undefined ? endpoint.url : viaGateway(endpoint.url, gateway.url),
        caBundle:
          gateway === undefined
            ? endpoint.caBundle
            : gateway.caPem === undefined
              ? undefined
              : Buffer.from(gateway.caPem).toString('base64'),
        token: this.#token,
        payload,
        invocationId: options.invocationId,
        // The gateway's own 504 arrives first.
        timeoutMs: (invocationTimeoutSeconds + 10) * 1000,
        signal: options.signal,
        agent: this.#agent,
      });
    } catch (error) {
      throw toolError(error);
    }
  }

  /** Deletes the sandbox Run and waits (bounded) until it is gone: its registration and workspace are removed. Idempotent. */
  async close(): Promise<void> {
    const name = this.name;
    this.#state = 'ended';
    this.#agent.destroy();
    if (name === undefined) return;
    const deleted = await this.#clients.runs.delete(this.namespace, name);
    // NotFound: already gone, as wanted.
    if (!deleted.ok && deleted.reason === 'Conflict') throw refusalError(deleted);
    await this.#waitFor('the sandbox Run to be gone', this.#options.endTimeoutMs ?? END_TIMEOUT_MS, 'EndTimeout', (run) =>
      run === undefined ? true : undefined,
    );
    this.#run = undefined;
  }

  /**
   * Ends the sandbox Run Cancelled (spec.cancelRequested) and waits (bounded) until it
   * ended and released its registration; the Run stays for its TTL.
   */
  async cancel(): Promise<void> {
    const name = this.name;
    this.#state = 'ended';
    this.#agent.destroy();
    if (name === undefined) return;
    const patched = await this.#clients.runs.mergePatch(this.namespace, name, { spec: { cancelRequested: true } });
    if (!patched.ok) throw refusalError(patched);
    this.#run = await this.#waitFor('the sandbox Run to end', this.#options.endTimeoutMs ?? END_TIMEOUT_MS, 'EndTimeout', (run) =>
      run === undefined || cancelFinished(run) ? run : undefined,
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #checkRuntime(): Promise<void> {
    let runtime: Runtime | undefined;
    let readError: string | undefined;
    try {
      runtime = await this.#clients.runtimes.get(this.namespace, this.runtime);
    } catch (error) {
      readError = error instanceof ApiException ? `HTTP ${error.code}` : (error as Error).message;
    }
    const check = decideRuntimeCheck({ name: this.runtime, runtime, readError, exclusive: this.#options.exclusive === true });
    switch (check.kind) {
      case 'exclusive':
        return;
      case 'warn':
        this.#warn({ code: readError === undefined ? 'RuntimeNotExclusive' : 'RuntimeUnreadable', message: check.message });
        return;
      case 'refuse':
        throw new SandboxError(check.code, check.message);
    }
  }

  #warn(warning: SandboxWarning): void {
    if (this.listenerCount('warning') > 0) this.emit('warning', warning);
    else process.emitWarning(warning.message, { type: 'KruntimesSandboxWarning', code: warning.code });
  }

  async #create(): Promise<Run> {
    const o = this.#options;
    const body: Run & { metadata: { generateName: string } } = {
      apiVersion: API_GROUP_VERSION,
      kind: 'Run',
      metadata: { generateName: SANDBOX_GENERATE_NAME, namespace: this.namespace, ...(o.labels === undefined ? {} : { labels: o.labels }) },
      spec: {
        runtime: this.runtime,
        source: { inline: SANDBOX_SOURCE },
        mode: {
          function: {
            handler: SANDBOX_HANDLER,
            idleTimeoutSeconds: o.idleTimeoutSeconds ?? SANDBOX_DEFAULT_IDLE_TIMEOUT_SECONDS,
            ...(o.invocationTimeoutSeconds === undefined ? {} : { invocationTimeoutSeconds: o.invocationTimeoutSeconds }),
          },
        },
        ...(o.ttlSecondsAfterFinished === undefined ? {} : { ttlSecondsAfterFinished: o.ttlSecondsAfterFinished }),
      },
    };
    // generateName: the name cannot be taken.
    const created = await this.#clients.runs.create(this.namespace, body);
    if (!created.ok) throw refusalError(created);
    return created.object;
  }

  async #waitReady(): Promise<Run> {
    return this.#waitFor('the sandbox Run to be Ready', this.#options.readyTimeoutMs ?? READY_TIMEOUT_MS, 'ReadyTimeout', (run) => {
      if (run === undefined) throw new SandboxError('SandboxEnded', `sandbox Run "${this.name ?? ''}" was deleted`, this.name);
      const state = sandboxState(run);
      switch (state.kind) {
        case 'ready':
          return run;
        case 'ended':
          throw new SandboxError('SandboxEnded', state.message, this.name);
        case 'waiting':
          return undefined;
      }
    });
  }

  /**
   * Re-reads the Run at every change a watch reports until `decide` answers (the Run is
   * undefined once it is gone), bounded by `timeoutMs`.
   */
  async #waitFor<T>(
    what: string,
    timeoutMs: number,
    code: 'ReadyTimeout' | 'EndTimeout',
    decide: (run: Run | undefined) => T | undefined,
  ): Promise<T> {
    const name = this.name ?? '';
    const deadline = Date.now() + timeoutMs;
    let seen = 'unknown';
    for (;;) {
      const run = await this.#get(name);
      const decided = decide(run);
      if (decided !== undefined) return decided;
      if (run !== undefined) this.#run = run;
      seen = run?.status?.phase ?? 'Pending';
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new SandboxError(code, `timed out after ${timeoutMs} ms waiting for ${what} (phase ${seen})`, name);
      const how = await nextChange(
        this.#options.kubeConfig,
        `/apis/${API_GROUP}/${API_VERSION}/namespaces/${this.namespace}/${RUN_PLURAL}`,
        name,
        run?.metadata.resourceVersion ?? '',
        remaining,
      );
      if (how === 'ended') await sleep(Math.min(REWATCH_PAUSE_MS, Math.max(0, deadline - Date.now())));
    }
  }

  async #get(name: string): Promise<Run | undefined> {
    return this.#clients.runs.get(this.namespace, name);
  }
}

function timeoutOf(options: ExecOptions): { timeoutSeconds?: number } {
  return options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds };
}

/** The endpoint URL with its origin replaced: the path always comes from the Run. */
function viaGateway(endpointUrl: string, gatewayOrigin: string): string {
  const endpoint = new URL(endpointUrl);
  return `${gatewayOrigin.replace(/\/+$/, '')}${endpoint.pathname}${endpoint.search}`;
}

/** The kubeconfig user's bearer token (token, tokenFile, exec plugin): the gateway authorizes that very token. */
async function bearerToken(config: KubeConfig): Promise<string> {
  const options: { headers: Record<string, string> } = { headers: {} };
  await config.applyToHTTPSOptions(options);
  const header = options.headers.Authorization ?? '';
  const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : '';
  if (token === '') {
    throw new SandboxError(
      'NotStarted',
      `the kubeconfig user "${config.getCurrentUser()?.name ?? ''}" has no bearer token; pass options.token (the gateway takes only a bearer token)`,
    );
  }
  return token;
}
