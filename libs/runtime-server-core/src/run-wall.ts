import { spawn } from 'node:child_process';
import { chmod, chown, cp, lchown, lstat, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import { guard } from './group-watch.ts';
import type { Guard } from './group-watch.ts';
import { UidPool, parseUidRange } from './uid-pool.ts';
import type { UidRange } from './uid-pool.ts';
import { procHidesOtherUids } from './proc-visibility.ts';
import { processesOf } from './uid-processes.ts';

/** The uid and gid (same number) one Run's processes run as. */
export interface RunIdentity {
  readonly uid: number;
  readonly gid: number;
}

/** Limits the kernel keeps per uid (processes) or per process tree (file size), set before user code runs. */
export interface RunLimits {
  /** RLIMIT_NPROC: processes and threads of the Run's uid at once. */
  readonly processes: number;
  /** RLIMIT_FSIZE in 1 KiB blocks: the largest file the Run may write. */
  readonly fileKiB: number;
}

export const DEFAULT_RUN_LIMITS: RunLimits = { processes: 1024, fileKiB: 4 * 1024 * 1024 };

/** How long the processes of an ended Run may take to be gone before its uid is retired. */
export const UID_RECLAIM_BOUND_MS = 5_000;
const RECLAIM_POLL_MS = 5;

/**
 * Where one execution (a task attempt, a function registration) runs. Walled (`identity`
 * set): a directory of its own that only its uid's group enters, its source copied in
 * read-only to it, HOME and TMPDIR its own (0700), and a uid no other Run has. Open: the
 * workdir runtimed prepared and a private scratch directory, as one user for every Run.
 */
export interface RunSandbox {
  readonly identity: RunIdentity | undefined;
  /** The working directory of the Run's processes. */
  readonly workdir: string;
  /** What the Run's processes get on top of their own env (HOME, TMPDIR). */
  readonly env: Readonly<Record<string, string>>;
  /** The Run's own directory for what the server reads back (the outputs file). */
  readonly outDir: string;
  /** What the server writes for the Run to read only (a continuation's resume files). */
  readonly inDir: string;
  /** Shell commands run before user code: umask 077 and the per-uid limits. Empty when open. */
  readonly prologue: string;
  /** A new directory of the Run's own, removed with the sandbox (a bash invocation's outputs). */
  privateDir(name: string): Promise<string>;
  /** A file the server wrote in `inDir` becomes readable, never writable, by the Run. */
  shareReadOnly(path: string): Promise<void>;
  /** The Run's process group, killed with the sandbox if this server dies first. */
  guardGroup(pgid: number): void;
  /**
   * Kills every process of the Run's uid (a walled Run's `setsid` children included); false
   * when some survived the bound. Open: nothing to do (the caller kills its groups).
   */
  endProcesses(): Promise<boolean>;
  /** Kills every process of the Run, whatever its group or session, then removes its directories. */
  close(): Promise<void>;
}

export interface RunWallOptions {
  /** The uids handed to Runs; undefined: the wall is off (every Run is this server's user). */
  readonly uids: UidRange | undefined;
  readonly limits?: RunLimits;
  readonly logger: Logger;
  /** Where the sandboxes go (default: a new directory under the temporary directory). */
  readonly root?: string;
  /** A command the Runs' users must be able to run (the language's interpreter), checked at start. */
  readonly probe?: readonly string[] | undefined;
}

/**
 * Makes a sandbox for each execution and takes it down when the execution ends. One per
 * Runtime Server. A walled server runs as uid 0 of the Pod's user namespace and needs
 * CAP_SETUID and SETGID (to start Runs as their uid), CHOWN and FOWNER (to give them their
 * directories), DAC_OVERRIDE (to read runtimed's workspace and remove the Runs' files) and
 * KILL (to signal a Run's process group: cancel, timeout, a task's end). A Run's leftovers
 * are killed by a process of its own uid (`kill -1`), which reaches every one of them.
 */
export class RunWall {
  readonly #pool: UidPool | undefined;
  readonly #limits: RunLimits;
  readonly #logger: Logger;
  readonly #root: string;
  readonly #guarded: Guard;
  #sequence = 0;

  private constructor(pool: UidPool | undefined, root: string, guarded: Guard, options: RunWallOptions) {
    this.#pool = pool;
    this.#root = root;
    this.#guarded = guarded;
    this.#limits = options.limits ?? DEFAULT_RUN_LIMITS;
    this.#logger = options.logger;
  }

  /** A walled server checks at start that it can give a uid its directories and start a process as it. */
  static async start(options: RunWallOptions): Promise<RunWall> {
    if (options.uids !== undefined && process.getuid?.() !== 0) {
      throw new Error('KRT_RUN_UIDS is set but the Runtime Server is not uid 0 of its user namespace');
    }
    const root = options.root ?? (await mkdtemp(join(tmpdir(), 'krt-runs-')));
    await mkdir(root, { recursive: true });
    // Removed with everything in it if this server dies first.
    const guarded = guard({ removePath: root });
    if (options.uids === undefined) return new RunWall(undefined, root, guarded, options);
    // Runs pass through to their own directory, never list the others.
    await chown(root, 0, 0);
    await chmod(root, 0o711);
    await checkSearchable(dirname(root));
    const wall = new RunWall(new UidPool(options.uids), root, guarded, options);
    await wall.#probe(options.uids.first, options.probe);
    return wall;
  }

  /** Removes the sandboxes' directory: once every execution and registration is closed. */
  async close(): Promise<void> {
    await rm(this.#root, { recursive: true, force: true });
    this.#guarded.release();
  }

  /** From KRT_RUN_UIDS (unset or empty: the wall is off). */
  static uidsFromEnv(env: NodeJS.ProcessEnv = process.env): UidRange | undefined {
    const text = env.KRT_RUN_UIDS ?? '';
    if (text === '') return undefined;
    const range = parseUidRange(text);
    if (range instanceof Error) throw range;
    return range;
  }

  get walled(): boolean {
    return this.#pool !== undefined;
  }

  /** Runs holding a uid now, and uids retired because processes of theirs survived. */
  get uids(): { held: number; retired: number } {
    return { held: this.#pool?.held ?? 0, retired: this.#pool?.retired ?? 0 };
  }

  /** A sandbox (`exec-N`, `fn-N`) for an execution or registration whose source runtimed put in `source`. */
  async open(source: string, kind: 'exec' | 'fn'): Promise<RunSandbox> {
    const dir = join(this.#root, `${kind}-${String(++this.#sequence)}`);
    const pool = this.#pool;
    if (pool === undefined) return this.#openSandbox(source, dir);
    const uid = pool.acquire();
    if (uid === undefined)
      throw new KruntimesError('Internal', 'no Run uid is free on this Runtime Server (KRT_RUN_UIDS is smaller than the Runs it holds)');
    try {
      return await this.#walledSandbox(source, dir, { uid, gid: uid }, pool);
    } catch (error) {
      // Nothing of the uid ran yet.
      await rm(dir, { recursive: true, force: true });
      pool.release(uid);
      throw error;
    }
  }

  async #openSandbox(source: string, dir: string): Promise<RunSandbox> {
    await mkdir(dir, { mode: 0o700 });
    const guarded = guard({ removePath: dir });
    // The walled layout, without the users: the same paths whichever way the server runs.
    const [outDir, inDir] = await Promise.all([makeDir(join(dir, 'out'), 0o700), makeDir(join(dir, 'in'), 0o700)]);
    return {
      identity: undefined,
      workdir: source,
      env: {},
      outDir,
      inDir,
      prologue: '',
      privateDir: (name) => makeDir(join(dir, name), 0o700),
      shareReadOnly: () => Promise.resolve(),
      guardGroup: (pgid) => {
        guarded.group(pgid);
      },
      endProcesses: () => Promise.resolve(true),
      close: async () => {
        await rm(dir, { recursive: true, force: true });
        guarded.release();
      },
    };
  }

  async #walledSandbox(source: string, dir: string, identity: RunIdentity, pool: UidPool): Promise<RunSandbox> {
    const { uid, gid } = identity;
    // The Run's group enters; nothing in it can be renamed or replaced by the Run.
    await makeDir(dir, 0o750, 0, gid);
    // Killed and removed if this server dies first.
    const guarded = guard({ removePath: dir, killUid: uid });
    const workdir = join(dir, 'work');
    await copySource(source, workdir, gid);
    const [home, tmp, outDir, inDir] = await Promise.all([
      makeDir(join(dir, 'home'), 0o700, uid, gid),
      makeDir(join(dir, 'tmp'), 0o700, uid, gid),
      makeDir(join(dir, 'out'), 0o700, uid, gid),
      makeDir(join(dir, 'in'), 0o750, 0, gid),
    ]);
    return {
      identity,
      workdir,
      env: { HOME: home, TMPDIR: tmp },
      outDir,
      inDir,
      prologue: prologue(this.#limits),
      privateDir: (name) => makeDir(join(dir, name), 0o700, uid, gid),
      shareReadOnly: async (path) => {
        await chown(path, 0, gid);
        await chmod(path, 0o440);
      },
      guardGroup: (pgid) => {
        guarded.group(pgid);
      },
      endProcesses: () => killAllOf(identity, UID_RECLAIM_BOUND_MS),
      close: async () => {
        const gone = await killAllOf(identity, UID_RECLAIM_BOUND_MS);
        await rm(dir, { recursive: true, force: true });
        if (gone) pool.release(uid);
        else {
          pool.retire(uid);
          this.#logger.error(
            { uid },
            `processes of uid ${String(uid)} survived SIGKILL for ${String(UID_RECLAIM_BOUND_MS / 1000)} s: uid retired`,
          );
        }
        guarded.release();
      },
    };
  }

  /** Starting a process as a Run uid must work, and the wall must hold, before any Run relies on it. */
  async #probe(uid: number, command: readonly string[] | undefined): Promise<void> {
    const exposed = procHidesOtherUids() ?? privilegesCanGrow();
    if (exposed !== undefined) {
      throw new Error(
        `KRT_RUN_UIDS is set but ${exposed}; start the server through krt-wall-entry with CAP_SYS_ADMIN, SYS_RESOURCE and SETPCAP of its user namespace (docs/security-model.md)`,
      );
    }
    const failure = failureOf(await runAs({ uid, gid: uid }, 'exit 0'));
    if (failure !== undefined) {
      throw new Error(`KRT_RUN_UIDS is set but a process cannot be started as uid ${String(uid)}: ${failure}`);
    }
    const unreached = await reachProbe({ uid, gid: uid });
    if (unreached !== undefined) {
      throw new Error(`KRT_RUN_UIDS is set but this server cannot reach a process of uid ${String(uid)}: ${unreached}`);
    }
    if (command === undefined) return;
    // "$@": the command's words pass through the shell untouched.
    const unreachable = failureOf(await runAs({ uid, gid: uid }, '"$@" >/dev/null 2>&1', command));
    if (unreachable !== undefined) {
      throw new Error(
        `the Runs' users (uid ${String(uid)}) cannot run ${command.join(' ')} (${unreachable}): it or a directory above it is private to this server's user`,
      );
    }
  }
}

/** Why a Run could gain privileges on exec (a setuid file), or undefined when no_new_privs is set. */
function privilegesCanGrow(): string | undefined {
  const status = readFileSync('/proc/self/status', 'utf8');
  return /^NoNewPrivs:\s*1$/m.test(status) ? undefined : 'no_new_privs is not set: a Run could gain privileges through a setuid file';
}

/** Every directory above the sandboxes must let the Runs' users pass (a 0700 TMPDIR would not). */
async function checkSearchable(dir: string): Promise<void> {
  for (let current = dir; ; current = dirname(current)) {
    const { mode } = await stat(current);
    if ((mode & 0o001) === 0) {
      throw new Error(
        `Runs cannot reach their sandboxes: ${current} (mode ${(mode & 0o7777).toString(8)}) does not let other users pass; give the Runtime Server a TMPDIR they can`,
      );
    }
    if (dirname(current) === current) return;
  }
}

/** umask 077 and the limits; dash names the process limit -p, bash -u. */
function prologue(limits: RunLimits): string {
  const processes = String(limits.processes);
  return `umask 077; ulimit -p ${processes} 2>/dev/null || ulimit -u ${processes}; ulimit -f ${String(limits.fileKiB)};`;
}

async function makeDir(path: string, mode: number, uid?: number, gid?: number): Promise<string> {
  await mkdir(path, { mode });
  if (uid !== undefined && gid !== undefined) await chown(path, uid, gid);
  // mkdir's mode passes through the umask, which leaves the owner's bits (a umask that took
  // them would break far more than this): only group and other bits need setting again.
  if ((mode & 0o077) !== 0) await chmod(path, mode);
  return path;
}

/**
 * The Run's source, owned by root and read-only to the Run: its directories are the Run
 * group's to add files to (sticky: what root put there cannot be renamed or removed), its
 * files keep their execute bit. Links are copied as links and never followed.
 */
async function copySource(source: string, workdir: string, gid: number): Promise<void> {
  await cp(source, workdir, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  await lockTree(workdir, gid, 0);
}

/** Bounded: a snapshot's depth is bounded by runtimed's extraction. */
const MAX_SOURCE_DEPTH = 64;

async function lockTree(path: string, gid: number, depth: number): Promise<void> {
  const info = await lstat(path);
  if (info.isSymbolicLink()) {
    await lchown(path, 0, gid);
    return;
  }
  if (info.isDirectory()) {
    if (depth > MAX_SOURCE_DEPTH)
      throw new KruntimesError('InvalidRequest', `the source is nested deeper than ${String(MAX_SOURCE_DEPTH)}`);
    await chown(path, 0, gid);
    await chmod(path, 0o1770);
    for (const entry of await readdir(path)) await lockTree(join(path, entry), gid, depth + 1);
    return;
  }
  await chown(path, 0, gid);
  await chmod(path, (info.mode & 0o111) === 0 ? 0o444 : 0o555);
}

/**
 * SIGKILL to every process of the uid, sent by a process of that uid (`kill -1` reaches
 * exactly the processes one may signal, whatever their group or session, without the
 * pid-reuse race of killing by pid), until none is left (bounded). True when none is.
 */
export async function killAllOf(identity: RunIdentity, boundMs: number): Promise<boolean> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    if (processesOf(identity.uid).length === 0) return true;
    if (Date.now() >= deadline) return false;
    // Its exit status says nothing: kill -1 fails when nothing was left to signal.
    await runAs(identity, 'kill -s KILL -- -1');
    await sleep(RECLAIM_POLL_MS);
  }
}

/** How a command run as a Run's identity ended: its exit status, or why it could not run. */
type Ending = { readonly exit: number | NodeJS.Signals } | { readonly error: string };

/** Undefined when the command exited 0, what went wrong otherwise. */
function failureOf(ending: Ending): string | undefined {
  if ('error' in ending) return ending.error;
  return ending.exit === 0 ? undefined : `exit ${String(ending.exit)}`;
}

/**
 * Why this server could not signal a process of the Run's uid (cancel, timeout, a task's end
 * signal its group: another uid takes CAP_KILL) or see it in /proc (the reclaim scan), or
 * undefined. The probe process ends when its stdin closes: only signal 0 is ever sent to it.
 */
async function reachProbe(identity: RunIdentity): Promise<string | undefined> {
  const child = spawn('/bin/sh', ['-c', 'read -r line'], {
    uid: identity.uid,
    gid: identity.gid,
    cwd: '/',
    env: {},
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  const ended = new Promise<void>((resolve) => {
    child.once('close', () => {
      resolve();
    });
    child.once('error', () => {
      resolve();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    if (child.pid === undefined) return 'the probe process did not start';
    try {
      process.kill(child.pid, 0);
    } catch (error) {
      return `${error instanceof Error ? error.message : String(error)} (it needs CAP_KILL to cancel and end Runs)`;
    }
    // hidepid without gid=<ours> would hide the Runs from the scan that reclaims their uids.
    if (!processesOf(identity.uid).includes(child.pid))
      return "/proc hides it from this server (hidepid's gid= must be the server's group): its uid could not be reclaimed";
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    child.stdin.end();
    await ended;
  }
}

/** Runs a shell command as the identity. */
function runAs(identity: RunIdentity, script: string, args: readonly string[] = []): Promise<Ending> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', script, 'krt-probe', ...args], {
      uid: identity.uid,
      gid: identity.gid,
      cwd: '/',
      env: {},
      stdio: 'ignore',
    });
    child.once('error', (error) => {
      resolve({ error: error.message });
    });
    child.once('exit', (code, signal) => {
      resolve({ exit: signal ?? code ?? -1 });
    });
  });
}
