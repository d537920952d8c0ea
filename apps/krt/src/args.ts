import { parseArgs } from 'node:util';
import { isArtifactId, isResponseId } from '@kruntimes/api';
import type { WaitTarget } from '@kruntimes/run-state';
import { triggerIdProblem } from '@kruntimes/schedule-core';
import { parseDurationMs } from './duration.ts';
import { usageError } from './exit-codes.ts';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';

export type Command =
  | { name: 'get'; run?: string; output: OutputFormat }
  | { name: 'wait'; run: string; target: WaitTarget; timeoutMs: number }
  | { name: 'invoke'; run: string; input: InvokeInput; invocationId?: string; timeoutMs: number; gateway?: string; gatewayCaFile?: string }
  /** `yes`: retry without asking, also what may repeat side effects (docs/lifecycle.md "Retries"). */
  | { name: 'retry'; run: string; refreshSource?: boolean; yes?: boolean }
  /** `wait`: wait until the Run is terminal, at most `timeoutMs`. */
  | { name: 'cancel'; run: string; wait?: { timeoutMs: number } }
  | { name: 'delete'; run: string }
  /** Creates the RunInput of one response, then waits at most `waitTimeoutMs` for its decision. */
  | { name: 'respond'; run: string; responseId: string; input: RespondInput; waitTimeoutMs: number }
  /** `krt logs RUN [-f] [--attempt N] [--since D] [--invocation-id ID]`. */
  | { name: 'logs'; run: string; follow: boolean; attempt?: number; sinceMs?: number; invocationId?: string }
  | ScheduleCommandLine
  | ArtifactsCommandLine
  | RunLocalCommandLine
  | RunClusterCommandLine
  | SyncCommandLine
  | { name: 'version' }
  | { name: 'help' };

/** `krt run --local -f FILE [--language python|bash] [--update-lock]` (docs/local-mode.md). */
export interface RunLocalCommandLine {
  name: 'run';
  local: true;
  file: string;
  language?: string;
  updateLock: boolean;
}

/** `krt run -f FILE|- [--name N] [--wait] [--follow] [--timeout D]`: a Run created on the cluster. */
export interface RunClusterCommandLine {
  name: 'run';
  local: false;
  /** `-`: standard input. */
  file: string;
  runName?: string;
  /** Until the Run finished (a task) or is Ready (a function), printing its phase changes. */
  wait: boolean;
  /** Also stream the task's output (implies wait). */
  follow: boolean;
  /** Bound of the wait; none when not given. */
  timeoutMs?: number;
}

/** `krt sync ID|DIR [--without-artifacts]`. */
export interface SyncCommandLine {
  name: 'sync';
  target: string;
  withoutArtifacts: boolean;
}

/** `krt artifacts RUN [-o json]` lists; `--get ID -o FILE|-` downloads one, verified. */
export type ArtifactsCommandLine =
  { name: 'artifacts'; run: string; output: 'table' | 'json' } | { name: 'artifacts'; run: string; get: { id: string; to: string } };

/** `krt schedule trigger|get|suspend|resume`. */
export type ScheduleCommandLine =
  | { name: 'schedule'; action: 'get'; schedule?: string; output: 'table' | 'json' | 'yaml' }
  | { name: 'schedule'; action: 'trigger'; schedule: string; triggerId?: string }
  | { name: 'schedule'; action: 'suspend' | 'resume'; schedule: string };

/** Where `krt respond` takes the response's data (JSON) from. */
export type RespondInput = { kind: 'data'; json: string } | { kind: 'file'; path: string } | { kind: 'stdin' };

/** Where `krt invoke` takes its payload from. */
export type InvokeInput = { kind: 'data'; json: string } | { kind: 'file'; path: string } | { kind: 'stdin' } | { kind: 'none' };

export interface GlobalFlags {
  kubeconfig?: string;
  namespace?: string;
}

export interface CommandLine {
  command: Command;
  global: GlobalFlags;
}

export const DEFAULT_WAIT_TIMEOUT_MS = 60_000;
export const DEFAULT_INVOKE_TIMEOUT_MS = 30_000;
export const DEFAULT_RESPOND_WAIT_TIMEOUT_MS = 30_000;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  help: { type: 'boolean', short: 'h' },
  output: { type: 'string', short: 'o' },
  for: { type: 'string' },
  timeout: { type: 'string' },
  file: { type: 'string', short: 'f' },
  data: { type: 'string' },
  'invocation-id': { type: 'string' },
  gateway: { type: 'string' },
  'gateway-ca': { type: 'string' },
  id: { type: 'string' },
  wait: { type: 'boolean' },
  get: { type: 'string' },
  local: { type: 'boolean' },
  language: { type: 'string' },
  'update-lock': { type: 'boolean' },
  'without-artifacts': { type: 'boolean' },
  'data-file': { type: 'string' },
  'wait-timeout': { type: 'string' },
  follow: { type: 'boolean' },
  attempt: { type: 'string' },
  since: { type: 'string' },
  name: { type: 'string' },
  'refresh-source': { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
} as const;

type OptionName = keyof typeof OPTIONS;
const GLOBAL_OPTIONS: readonly OptionName[] = ['kubeconfig', 'namespace', 'help'];
const COMMAND_OPTIONS: Record<Exclude<Command['name'], 'help'>, readonly OptionName[]> = {
  get: ['output'],
  wait: ['for', 'timeout'],
  invoke: ['file', 'data', 'invocation-id', 'timeout', 'gateway', 'gateway-ca'],
  retry: ['refresh-source', 'yes'],
  cancel: ['wait', 'timeout'],
  delete: [],
  respond: ['id', 'data', 'data-file', 'wait-timeout'],
  schedule: ['id', 'output'],
  artifacts: ['get', 'output'],
  run: ['local', 'file', 'language', 'update-lock', 'name', 'wait', 'follow', 'timeout'],
  logs: ['follow', 'attempt', 'since', 'invocation-id'],
  sync: ['without-artifacts'],
  version: [],
};

function isCommandName(name: string): name is keyof typeof COMMAND_OPTIONS {
  return Object.hasOwn(COMMAND_OPTIONS, name);
}

/** Parses krt's arguments (without `node main.ts`); throws a usage CliError (exit 2). */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: followFlag(argv), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageError((error as Error).message.split('\n')[0] ?? 'invalid arguments');
  }
  const { values, positionals } = parsed;
  const global: GlobalFlags = {};
  if (values.kubeconfig !== undefined) global.kubeconfig = nonEmpty('--kubeconfig', values.kubeconfig);
  if (values.namespace !== undefined) global.namespace = nonEmpty('--namespace', values.namespace);

  const [name, ...rest] = positionals;
  if (name === 'help' || values.help === true) return { command: { name: 'help' }, global };
  if (name === undefined) throw usageError('missing command');
  if (!isCommandName(name)) throw usageError(`unknown command "${name}" (commands: ${Object.keys(COMMAND_OPTIONS).join(', ')})`);
  const allowed = new Set<OptionName>([...GLOBAL_OPTIONS, ...COMMAND_OPTIONS[name]]);
  for (const option of Object.keys(values) as OptionName[]) {
    if (!allowed.has(option)) throw usageError(`krt ${name} does not take --${option}`);
  }
  if (name === 'schedule') return { command: scheduleCommandLine(rest, values), global };
  if (name === 'artifacts') return { command: artifactsCommandLine(rest, values), global };
  if (name === 'run')
    return { command: values.local === true ? runLocalCommandLine(rest, values) : runClusterCommandLine(rest, values), global };
  if (name === 'logs') return { command: logsCommandLine(rest, values), global };
  if (name === 'version') {
    if (rest.length > 0) throw usageError('krt version takes no arguments');
    return { command: { name }, global };
  }
  if (name === 'sync') {
    if (rest.length !== 1 || rest[0] === undefined || rest[0] === '')
      throw usageError('krt sync takes exactly one local run ID or run directory');
    return { command: { name, target: rest[0], withoutArtifacts: values['without-artifacts'] === true }, global };
  }
  if (name === 'get') {
    if (rest.length > 1) throw usageError('krt get takes at most one Run name');
    const output = outputFormat(values.output);
    return { command: rest[0] === undefined ? { name, output } : { name, run: runName(rest[0]), output }, global };
  }
  if (rest.length !== 1 || rest[0] === undefined) throw usageError(`krt ${name} takes exactly one Run name`);
  const run = runName(rest[0]);
  switch (name) {
    case 'wait': {
      if (values.for === undefined) throw usageError('krt wait needs --for ready|done|input');
      const target = waitTarget(values.for);
      if (target === undefined) throw usageError(`--for must be ready, done or input, not "${values.for}"`);
      return { command: { name, run, target, timeoutMs: duration(values.timeout, DEFAULT_WAIT_TIMEOUT_MS) }, global };
    }
    case 'invoke': {
      if (values.data !== undefined && values.file !== undefined) throw usageError('give the payload with --data or -f, not both');
      const input: InvokeInput =
        values.data !== undefined
          ? { kind: 'data', json: values.data }
          : values.file === '-'
            ? { kind: 'stdin' }
            : values.file !== undefined
              ? { kind: 'file', path: nonEmpty('-f', values.file) }
              : { kind: 'none' };
      const command: Command = { name, run, input, timeoutMs: duration(values.timeout, DEFAULT_INVOKE_TIMEOUT_MS) };
      if (values['invocation-id'] !== undefined) command.invocationId = values['invocation-id'];
      if (values.gateway !== undefined) command.gateway = gatewayOrigin(values.gateway);
      if (values['gateway-ca'] !== undefined) command.gatewayCaFile = nonEmpty('--gateway-ca', values['gateway-ca']);
      return { command, global };
    }
    case 'cancel':
      if (values.wait !== true) {
        if (values.timeout !== undefined) throw usageError('krt cancel takes --timeout only with --wait');
        return { command: { name, run }, global };
      }
      return { command: { name, run, wait: { timeoutMs: duration(values.timeout, DEFAULT_WAIT_TIMEOUT_MS) } }, global };
    case 'respond':
      return { command: respondCommandLine(run, values), global };
    case 'retry':
      return {
        command: {
          name,
          run,
          ...(values['refresh-source'] === true ? { refreshSource: true } : {}),
          ...(values.yes === true ? { yes: true } : {}),
        },
        global,
      };
    case 'delete':
      return { command: { name, run }, global };
  }
}

/** In `krt logs`, `-f` means --follow, as in kubectl logs (elsewhere it is -f FILE). */
function followFlag(argv: readonly string[]): string[] {
  return commandOf(argv) === 'logs' ? argv.map((arg) => (arg === '-f' ? '--follow' : arg)) : [...argv];
}

/** The first positional argument: options and the values of those that take one are skipped. */
function commandOf(argv: readonly string[]): string | undefined {
  const takesValue = new Set<string>();
  for (const [name, option] of Object.entries(OPTIONS)) {
    if (option.type !== 'string') continue;
    takesValue.add(`--${name}`);
    if ('short' in option) takesValue.add(`-${option.short}`);
  }
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg === '--') return argv[i + 1];
    if (!arg.startsWith('-')) return arg;
    if (takesValue.has(arg)) i += 1;
  }
  return undefined;
}

function logsCommandLine(
  rest: string[],
  values: { follow?: boolean; attempt?: string; since?: string; 'invocation-id'?: string },
): Command {
  if (rest.length !== 1 || rest[0] === undefined) throw usageError('krt logs takes exactly one Run name');
  const command: Extract<Command, { name: 'logs' }> = { name: 'logs', run: runName(rest[0]), follow: values.follow === true };
  if (values.attempt !== undefined) {
    if (!/^[1-9]\d{0,8}$/.test(values.attempt)) throw usageError(`--attempt must be a positive integer, not "${values.attempt}"`);
    command.attempt = Number(values.attempt);
  }
  if (values.since !== undefined) command.sinceMs = duration(values.since, 0, '--since');
  if (values['invocation-id'] !== undefined) command.invocationId = nonEmpty('--invocation-id', values['invocation-id']);
  return command;
}

function runClusterCommandLine(
  rest: string[],
  values: { file?: string; language?: string; 'update-lock'?: boolean; name?: string; wait?: boolean; follow?: boolean; timeout?: string },
): RunClusterCommandLine {
  if (rest.length > 0) throw usageError('krt run takes the Run from -f FILE (or - for stdin), not from arguments');
  if (values.file === undefined || values.file === '') throw usageError('krt run needs -f FILE (a Run manifest, or - for stdin)');
  if (values.language !== undefined || values['update-lock'] !== undefined)
    throw usageError('--language and --update-lock go with --local');
  const command: RunClusterCommandLine = {
    name: 'run',
    local: false,
    file: values.file,
    wait: values.wait === true || values.follow === true,
    follow: values.follow === true,
  };
  if (values.name !== undefined) command.runName = runName(values.name);
  if (values.timeout !== undefined) {
    if (!command.wait) throw usageError('krt run takes --timeout only with --wait or --follow');
    command.timeoutMs = duration(values.timeout, 0);
  }
  return command;
}

function runLocalCommandLine(
  rest: string[],
  values: {
    local?: boolean;
    file?: string;
    language?: string;
    'update-lock'?: boolean;
    name?: string;
    wait?: boolean;
    follow?: boolean;
    timeout?: string;
  },
): RunLocalCommandLine {
  if (values.name !== undefined || values.wait !== undefined || values.follow !== undefined || values.timeout !== undefined) {
    throw usageError('krt run --local always waits and shows the output; --name, --wait, --follow and --timeout go without --local');
  }
  if (rest.length > 0) throw usageError('krt run --local takes the Run from -f FILE, not from arguments');
  if (values.file === undefined || values.file === '' || values.file === '-')
    throw usageError('krt run --local needs -f FILE (the run file; its lock and results go to .krt/ beside it)');
  const command: RunLocalCommandLine = { name: 'run', local: true, file: values.file, updateLock: values['update-lock'] === true };
  if (values.language !== undefined) command.language = values.language;
  return command;
}

function waitTarget(value: string): WaitTarget | undefined {
  switch (value) {
    case 'ready':
      return 'ready';
    case 'done':
      return 'finished';
    case 'input':
      return 'input';
    default:
      return undefined;
  }
}

function respondCommandLine(
  run: string,
  values: { id?: string; data?: string; 'data-file'?: string; 'wait-timeout'?: string },
): Extract<Command, { name: 'respond' }> {
  if (values.id === undefined) throw usageError('krt respond needs --id ID: the response ID (the same ID again is the same response)');
  if (!isResponseId(values.id)) {
    throw usageError(`--id "${values.id}" is not a response ID: 1-128 letters, digits and ._:- starting with a letter or digit`);
  }
  const file = values['data-file'];
  if (values.data !== undefined && file !== undefined) throw usageError('give the response with --data or --data-file, not both');
  const input: RespondInput | undefined =
    values.data !== undefined
      ? { kind: 'data', json: values.data }
      : file === '-'
        ? { kind: 'stdin' }
        : file === undefined
          ? undefined
          : { kind: 'file', path: nonEmpty('--data-file', file) };
  if (input === undefined) throw usageError('krt respond needs the response: --data JSON or --data-file FILE (- for stdin)');
  const waitTimeoutMs = duration(values['wait-timeout'], DEFAULT_RESPOND_WAIT_TIMEOUT_MS, '--wait-timeout');
  return { name: 'respond', run, responseId: values.id, input, waitTimeoutMs };
}

function artifactsCommandLine(rest: string[], values: { get?: string; output?: string }): ArtifactsCommandLine {
  if (rest.length !== 1 || rest[0] === undefined) throw usageError('krt artifacts takes exactly one Run name');
  const run = runName(rest[0]);
  if (values.get === undefined) {
    if (values.output !== undefined && values.output !== 'json')
      throw usageError(`krt artifacts lists with -o json, not "${values.output}"`);
    return { name: 'artifacts', run, output: values.output === 'json' ? 'json' : 'table' };
  }
  if (!isArtifactId(values.get)) throw usageError(`"${values.get}" is not a valid artifact ID`);
  if (values.output === undefined || values.output === '') throw usageError('krt artifacts --get ID needs -o FILE (or -o - for stdout)');
  return { name: 'artifacts', run, get: { id: values.get, to: values.output } };
}

function scheduleCommandLine(rest: string[], values: { id?: string; output?: string }): ScheduleCommandLine {
  const [action, schedule, extra] = rest;
  if (extra !== undefined) throw usageError('krt schedule takes an action and at most one RunSchedule name');
  if (action !== 'get' && values.output !== undefined) throw usageError(`krt schedule ${action ?? ''} does not take -o`);
  if (action !== 'trigger' && values.id !== undefined) throw usageError(`krt schedule ${action ?? ''} does not take --id`);
  switch (action) {
    case 'get': {
      const output = outputFormat(values.output);
      if (output === 'wide') throw usageError('krt schedule get takes -o json or yaml');
      return schedule === undefined
        ? { name: 'schedule', action, output }
        : { name: 'schedule', action, schedule: runName(schedule, 'RunSchedule'), output };
    }
    case 'trigger':
    case 'suspend':
    case 'resume': {
      if (schedule === undefined) throw usageError(`krt schedule ${action} takes a RunSchedule name`);
      if (action !== 'trigger') return { name: 'schedule', action, schedule: runName(schedule, 'RunSchedule') };
      const command: ScheduleCommandLine = { name: 'schedule', action, schedule: runName(schedule, 'RunSchedule') };
      if (values.id !== undefined) {
        const problem = triggerIdProblem(values.id);
        if (problem !== undefined) throw usageError(`--id: ${problem}`);
        command.triggerId = values.id;
      }
      return command;
    }
    case undefined:
    default:
      throw usageError(`krt schedule needs an action: trigger, get, suspend or resume${action === undefined ? '' : `, not "${action}"`}`);
  }
}

/** --gateway: an https origin (scheme, host, port), without a path. */
function gatewayOrigin(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`--gateway must be an https URL like https://127.0.0.1:8443, not "${value}"`);
  }
  if (url.protocol !== 'https:' || (url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.username !== '') {
    throw usageError(`--gateway must be an https URL like https://127.0.0.1:8443, without path or credentials, not "${value}"`);
  }
  return url.origin;
}

function outputFormat(value: string | undefined): OutputFormat {
  switch (value) {
    case undefined:
      return 'table';
    case 'wide':
    case 'json':
    case 'yaml':
      return value;
    default:
      throw usageError(`-o must be json, yaml or wide, not "${value}"`);
  }
}

function duration(value: string | undefined, fallback: number, flag = '--timeout'): number {
  if (value === undefined) return fallback;
  const ms = parseDurationMs(value);
  if (ms === undefined || ms <= 0) throw usageError(`${flag} must be a positive duration like 30s, 2m or 1m30s, not "${value}"`);
  return ms;
}

function nonEmpty(flag: string, value: string): string {
  if (value === '') throw usageError(`${flag} needs a value`);
  return value;
}

/** A Run (or RunSchedule) name is a DNS subdomain; checked here so that a typo is a usage error, not a 404. */
function runName(value: string, kind = 'Run'): string {
  if (value.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(value)) {
    throw usageError(`"${value}" is not a valid ${kind} name (lower-case letters, digits, '-' and '.')`);
  }
  return value;
}

export const USAGE = `krt: the kruntimes CLI

Usage:
  krt get [RUN] [-o json|yaml|wide]          show a Run (or list the namespace's Runs)
  krt wait RUN --for ready|done|input [--timeout 60s]
                                            wait until the Run is Ready / finished / waiting for
                                            input (--for input prints the input schema)
  krt respond RUN --id ID --data JSON|--data-file FILE|- [--wait-timeout 30s]
                                            answer a Run waiting for input: creates the RunInput
                                            of response ID (the same ID again is the same response;
                                            needs RBAC create on runinputs) and waits for its
                                            decision: "accepted: attempt N continues", "already
                                            accepted (DuplicateResponse)", or refused (Reason)
  krt invoke RUN [-f FILE|-] [--data JSON] [--invocation-id ID] [--timeout 30s]
             [--gateway https://HOST:PORT] [--gateway-ca FILE]
                                            invoke a Ready function Run; result JSON on stdout
                                            (--gateway: reach the gateway at another address,
                                            e.g. a port-forward; --gateway-ca: its CA PEM)
  krt retry RUN [--refresh-source] [--yes]  create a new Run retrying a finished one; it runs the
                                            parent's source snapshot (same digest) unless
                                            --refresh-source reads spec.source again. A task that
                                            ended Interrupted or is not retrySafe may repeat side
                                            effects: asks [y/N] on a terminal, refused without one
                                            (exit 7) unless --yes
  krt cancel RUN [--wait [--timeout 60s]]   request cancellation; --wait: until the Run finished
  krt delete RUN                            delete a Run
  krt schedule trigger SCHEDULE [--id ID]   a manual Run of a RunSchedule; the same --id again
                                            is the same Run (a retried trigger never runs twice)
  krt schedule get [SCHEDULE] [-o json|yaml]
  krt schedule suspend|resume SCHEDULE      stop / restart creating scheduled Runs
  krt artifacts RUN [-o json]               list the verified artifacts of a succeeded Run
  krt artifacts RUN --get ID -o FILE|-      download one, verified against its size and sha256
                                            (needs get on the Run's ArtifactStore and its Secret)
  krt logs RUN [-f] [--attempt N] [--since 5m] [--invocation-id ID]
                                            a task's stdout and stderr (per attempt), or a function
                                            Run's invocation lines, from runtimed's log on the
                                            Runtime's Pods (needs get on pods/log); -f until the Run
                                            ends. An attempt whose Pod is gone is named, exit 3
  krt run -f FILE|- [--name N] [--wait] [--follow] [--timeout D]
                                            create a Run from a manifest (generateName when it has
                                            no name); --wait prints its phase changes until it
                                            finished (or is Ready); --follow also streams a task's
                                            output. Exit 0 Succeeded, 1 Failed, 5 Timeout or other
                                            platform error; Ctrl-C: 130 (asks whether to cancel)
  krt run --local -f FILE [--language python|bash] [--update-lock]
                                            run a task Run on this machine, no cluster: the real
                                            Runtime Server, the same bounds and result shape.
                                            Source and inputs are pinned by digest in the lock
                                            .krt/locks/FILE.lock.json beside FILE (a change is
                                            refused, exit 6, until --update-lock); results in
                                            .krt/runs/ID/ (status.json, stdout.log, stderr.log,
                                            artifacts/, lock.json). Exit 1 if it did not succeed
  krt sync ID|DIR [--without-artifacts]     record a local run on the cluster, only when asked:
                                            one Run NAME-ID with spec.origin (lock digest and
                                            result), never scheduled; a retried sync creates no
                                            second. A run with artifacts needs
                                            --without-artifacts (they are not uploaded)
  krt dev up|down|status|env|logs [...]     the local cluster with every service and a demo
                                            (from a clone of the repository; krt dev --help)
  krt version                               krt's version, and the Node.js or single executable
                                            running it

Flags of every command:
  --kubeconfig PATH     default: $KUBECONFIG, then ~/.kube/config
  -n, --namespace NS    default: the kubeconfig context's namespace, else "default"
  -h, --help

Exit codes: 0 ok, 1 the function failed (or a local task did not succeed), 2 usage or
invalid input, 3 not found, 4 unauthenticated or forbidden, 5 unavailable, timeout or
other platform error, 6 the local run file does not match its lock.
`;
