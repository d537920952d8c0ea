import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { runtimeServerV1 } from '@kruntimes/proto';
import { createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { REPO_ROOT } from './binaries.ts';
import { liveGroupMembers } from './processes.ts';
import { waitFor } from './wait.ts';
import type { WaitOptions } from './wait.ts';

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly address: string;
  readonly client: Client<runtimeServerV1.RuntimeServerDefinition>;
  readonly channel: Channel;
  /** The server's JSON log lines so far (for assertions and failure messages). */
  readonly logs: string[];
  stop(): Promise<void>;
}

export interface ServerProcessOptions {
  /**
   * In a PID namespace (and /proc) of its own, as in a container: its /proc scans see its
   * own processes, not the machine's (benchmarks of the wall's reclaim).
   */
  ownPidNamespace?: boolean;
  /**
   * As a walled Pod starts it (implies `ownPidNamespace`): through the images' entry, which
   * hides the Runs' processes from each other in that namespace's /proc and sets no_new_privs.
   */
  throughWallEntry?: boolean;
}

const PID_NAMESPACE_PREFIX = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child=SIGINT'];

/** The Runtime Server images' entry (deploy/docker): walls the Runs where it may, then starts the server. */
export const WALL_ENTRY = join(REPO_ROOT, 'libs/runtime-server-core/bin/krt-wall-entry');

function serverCommand(command: string[], options: ServerProcessOptions): string[] {
  if (options.throughWallEntry === true) return [...PID_NAMESPACE_PREFIX, WALL_ENTRY, ...command];
  return options.ownPidNamespace === true ? [...PID_NAMESPACE_PREFIX, ...command] : command;
}

/**
 * Starts the real server (`node src/main.ts`) on `listen` (default: a random 127.0.0.x
 * address and port 0), and waits, bounded, for its "listening" log line.
 */
export async function startServerProcess(
  mainTs: string,
  env: Record<string, string> = {},
  listen?: string,
  options: ServerProcessOptions = {},
): Promise<ServerProcess> {
  const host = `127.0.0.${2 + Math.floor(Math.random() * 250)}`;
  const command = [process.execPath, mainTs, '--listen', listen ?? `${host}:0`];
  // As root only. The server is pid 1 of its namespace; SIGKILL to unshare (which ignores
  // SIGINT and SIGTERM) reaches it as SIGINT (--kill-child).
  const [file, ...args] = serverCommand(command, options);
  const inOwnNamespace = file !== process.execPath;
  const child = spawn(file ?? process.execPath, args, {
    env: { ...process.env, KRT_LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`server did not start within 20 s:\n${logs.join('\n')}`));
    }, 20_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      logs.push(line);
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'runtime server listening' && entry.port !== undefined) {
        clearTimeout(timer);
        resolve(entry.port);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${logs.join('\n')}`));
    });
  });
  const address = listen?.startsWith('unix:') === true ? listen : `${host}:${port}`;
  // nice-grpc's createChannel passes only `scheme://` targets through untouched (it would
  // add a port to `unix:/path`), so a unix socket is dialled as `unix:///path`.
  const channel = createChannel(address.startsWith('unix:') ? `unix://${address.slice('unix:'.length)}` : address);
  return {
    child,
    address,
    channel,
    client: createClient(runtimeServerV1.RuntimeServerDefinition, channel),
    logs,
    async stop() {
      channel.close();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // SIGINT stops at once; SIGTERM (a Pod told to stop) would wait for runtimed's drain.
      child.kill(inOwnNamespace ? 'SIGKILL' : 'SIGINT');
      await exited;
    },
  };
}

/** What one Execute stream carried: its log lines (all, and by stream) and its `exited`. */
export interface ExecutionTranscript {
  lines: string[];
  stdout: string[];
  stderr: string[];
  exited: runtimeServerV1.ExecutionExited | undefined;
  /** The execution's process group (its pid), from `started`. */
  pgid: number;
  /** Processes of that group still alive when `exited` arrived: an end is reported only once none is. */
  liveAtExit: number[];
}

/** Runs one execution on a Runtime Server and follows its stream to the end. */
export async function executeToEnd(
  client: Client<runtimeServerV1.RuntimeServerDefinition>,
  request: runtimeServerV1.ExecuteRequest,
): Promise<ExecutionTranscript> {
  const transcript: ExecutionTranscript = { lines: [], stdout: [], stderr: [], exited: undefined, pgid: 0, liveAtExit: [] };
  for await (const { event } of client.execute(request)) {
    if (event?.$case === 'started') transcript.pgid = event.started.pid;
    if (event?.$case === 'log') {
      transcript.lines.push(event.log.text);
      (event.log.stream === runtimeServerV1.LogStream.LOG_STREAM_STDOUT ? transcript.stdout : transcript.stderr).push(event.log.text);
    }
    if (event?.$case === 'exited') {
      // Read before anything else can reap or kill: what was alive when the end was reported.
      if (transcript.pgid > 0) transcript.liveAtExit = await liveGroupMembers(transcript.pgid);
      transcript.exited = event.exited;
    }
  }
  return transcript;
}

/** An ExecuteRequest of attempt 1 with a fresh Run UID, with artifacts access when `grantToken` is given. */
export function executionRequest(options: {
  workdir: string;
  entrypoint: string;
  grants?: { address: string; token: string; declared: runtimeServerV1.DeclaredArtifact[] };
  extra?: Partial<runtimeServerV1.ExecuteRequest>;
}): runtimeServerV1.ExecuteRequest {
  const runUid = randomUUID();
  const { workdir, entrypoint, grants, extra } = options;
  return {
    executionId: `${runUid}/1`,
    runUid,
    attempt: 1,
    workdir,
    entrypoint,
    args: [],
    env: {},
    ...(grants === undefined ? {} : { artifacts: { grantAddress: grants.address, grantToken: grants.token, declared: grants.declared } }),
    ...extra,
  };
}

/** The bound of the waits below: a loaded machine's process start and a directory's removal. */
const TEST_FILE_WAIT: WaitOptions = { timeoutMs: 20_000, intervalMs: 50 };

/** What a Runtime Server made in `dir`, its TMPDIR (krt-bin-*, krt-runs-* and the sandboxes in it), and left there. */
export function runtimeServerTempDirs(dir: string): string[] {
  const names = readdirSync(dir).filter((name) => name.startsWith('krt-'));
  // The sandboxes' directory (krt-runs-*, there while the server runs), then each sandbox in it: `krt-runs/exec-1`, `krt-runs/fn-2`.
  return names.flatMap((name) => (name.startsWith('krt-runs-') ? [name, ...sandboxesIn(join(dir, name))] : [name]));
}

function sandboxesIn(root: string): string[] {
  try {
    return readdirSync(root).map((name) => `krt-runs/${name}`);
  } catch {
    return []; // removed meanwhile
  }
}

/** Waits, bounded, until `dir` holds none of a Runtime Server's directories; returns what is left. */
export async function runtimeServerTempDirsAfterWait(dir: string, options: WaitOptions = TEST_FILE_WAIT): Promise<string[]> {
  await waitFor(
    'no krt-* directory left',
    () => Promise.resolve(runtimeServerTempDirs(dir).length === 0 ? true : undefined),
    options,
  ).catch(() => undefined);
  return runtimeServerTempDirs(dir);
}

/** A number a test's process wrote into `file` as one line (its pid or its process group), read bounded. */
export function numberWrittenTo(file: string, options: WaitOptions = TEST_FILE_WAIT): Promise<number> {
  return waitFor(
    `a number in ${file}`,
    () => {
      let text = '';
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        // not written yet
      }
      return Promise.resolve(/^\d+\n$/.test(text) ? Number(text.trim()) : undefined);
    },
    options,
  );
}

/** SIGKILLs process groups a test may have left behind (afterEach); a group already gone is fine. */
export function killGroups(pgids: readonly number[]): void {
  for (const pgid of pgids) {
    if (pgid <= 1) continue;
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
