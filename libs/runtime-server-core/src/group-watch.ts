import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { isAbsolute } from 'node:path';
import type { Writable } from 'node:stream';

/**
 * The guard: one per Runtime Server process, reading lines from the pipe only the Runtime
 * Server holds. `hold ID group PGID`, `hold ID uid UID` and `hold ID path /ABS` add to item ID
 * (numeric; one of each), `release ID` forgets the item: only live items are kept, so a
 * Runtime Server that ran a million invocations costs the guard nothing more. End of file
 * means the Runtime Server is gone: every live group is killed, then every process of a live
 * uid (found by its /proc status: the guard is no process of that uid), then every live path removed
 * (once more after a second if one is still there: a member killed in the middle of a write
 * may still create a file). A line it cannot use is skipped, as is a last one cut short.
 * No text from a line is ever evaluated: `eval` sees only `[0-9]` ids, the value moves
 * through `$a`. The live ids are written to stdout at the end (nothing in production; tests
 * read them).
 */
const GUARD_SCRIPT = `set -f
n='
'
ids=' '
while IFS= read -r l; do
  w=\${l%% *}; r=\${l#* }; id=\${r%% *}; r=\${r#* }; k=\${r%% *}; a=\${r#* }
  case $id in ''|*[!0-9]*) continue;; esac
  case $w/$k in
  hold/group) case $a in ''|0*|1|*[!0-9]*) continue;; esac; eval "g_$id=\\$a";;
  hold/path) case $a in /*[!/]*) ;; *) continue;; esac; eval "p_$id=\\$a";;
  hold/uid) case $a in ''|0*|*[!0-9]*) continue;; esac; eval "u_$id=\\$a";;
  release/*)
    unset "g_$id" "p_$id" "u_$id"
    case $ids in *" $id "*) f=\${ids%% $id *}; ids="$f \${ids#* $id }";; esac
    continue;;
  *) continue;;
  esac
  case $ids in *" $id "*) ;; *) ids="$ids$id ";; esac
done
gs= ps= us=
for id in $ids; do
  eval "g=\\\${g_$id-} p=\\\${p_$id-} u=\\\${u_$id-}"
  [ -z "$g" ] || gs="$gs$n$g"
  [ -z "$p" ] || ps="$ps$n$p"
  [ -z "$u" ] || us="$us$n$u"
done
printf '%s\\n' "$ids"
IFS=$n
ku() {
  set +f
  for d in /proc/[0-9]*; do
    v=
    while IFS=' 	' read -r k v r; do [ "$k" != Uid: ] || break; v=; done 2>/dev/null <"$d/status"
    [ -z "$v" ] || case "$us$n" in *"$n$v$n"*) kill -s KILL "\${d#/proc/}" 2>/dev/null;; esac
  done
  set -f
}
end() {
  for g in $gs; do kill -s KILL -- "-$g" 2>/dev/null; done
  [ -z "$us" ] || { ku; ku; }
  [ -z "$ps" ] || rm -rf -- $ps 2>/dev/null
}
end
for p in $ps; do [ ! -e "$p" ] || { sleep 1; end; break; }; done
`;

/** The guard's name in the process table (its `$0`). */
export const GUARD_NAME = 'krt-guard';

/** How the guard is spawned: its own session, its stdin the pipe. */
export function guardProcess(): {
  command: string;
  args: string[];
  options: { detached: true; stdio: ['pipe', 'ignore', 'ignore'] };
} {
  return { command: '/bin/sh', args: ['-c', GUARD_SCRIPT, GUARD_NAME], options: { detached: true, stdio: ['pipe', 'ignore', 'ignore'] } };
}

/** One thing the guard holds for item `id`. */
export type GuardedThing = { readonly group: number } | { readonly uid: number } | { readonly path: string };

/**
 * The line that makes the guard hold `thing` as part of item `id`; throws for what the
 * guard must never act on (it would skip such a line anyway).
 */
export function holdLine(id: number, thing: GuardedThing): string {
  checkId(id);
  if ('group' in thing) {
    // 0 and 1 would make `kill -- -N` signal the guard's own group or every process.
    if (!Number.isSafeInteger(thing.group) || thing.group <= 1) throw new Error(`not a process group to guard: ${String(thing.group)}`);
    return `hold ${String(id)} group ${String(thing.group)}\n`;
  }
  if ('uid' in thing) {
    // uid 0 is the Runtime Server (and the guard) itself.
    if (!Number.isSafeInteger(thing.uid) || thing.uid < 1) throw new Error(`not a uid to guard: ${String(thing.uid)}`);
    return `hold ${String(id)} uid ${String(thing.uid)}\n`;
  }
  const { path } = thing;
  // A relative path would be resolved against wherever the guard runs; a newline would end
  // the line (the rest a line of its own), a NUL cannot pass through the shell.
  if (!isAbsolute(path)) throw new Error(`a guarded path must be absolute: ${path}`);
  if (/[\n\0]/.test(path)) throw new Error(`a guarded path must not contain a newline or NUL: ${JSON.stringify(path)}`);
  if (/^\/+$/.test(path)) throw new Error('the root directory is not a path to guard');
  return `hold ${String(id)} path ${path}\n`;
}

/** The line that makes the guard forget item `id`. */
export function releaseLine(id: number): string {
  checkId(id);
  return `release ${String(id)}\n`;
}

function checkId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 0) throw new Error(`not a guard item id: ${String(id)}`);
}

/** What a guarded item ends when the Runtime Server dies without releasing it. */
export interface GuardOptions {
  /** A process group (its leader's pid) to SIGKILL; `Guard.group` can name it later. */
  readonly killGroup?: number;
  /** A Run's uid: every process of it is SIGKILLed (before the path is removed). */
  readonly killUid?: number;
  /** An absolute path removed (recursively) after the group was killed. */
  readonly removePath?: string;
}

/** What the Runtime Server's death would end: `release()` once the Runtime Server ended it itself. */
export interface Guard {
  /** From now on the Runtime Server's death kills this process group too. */
  group(pgid: number): void;
  /** The Runtime Server ended (and removed) what is guarded: the guard forgets it. */
  release(): void;
}

/** This process's guard while it runs: started by the first item, again if it was killed. */
let current: { readonly pid: number | undefined; readonly input: Writable } | undefined;
/** False once a guard could not be started (no `/bin/sh`): each further try would cost a spawn. */
let startable = true;
/** What is held now, by id: its hold lines, told again to a guard started after one was killed. */
const held = new Map<number, string>();
let lastId = 0;

/** The running guard's pid, for tests. */
export function guardPid(): number | undefined {
  return current?.pid;
}

/**
 * Starts the guard: once, since a spawn per invocation would cost more than the invocation,
 * and again when it was killed (by task code, the OOM killer) while this process lives and
 * holds something. A guard that could not start guards nothing; the Runtime Server goes on.
 */
function start(): void {
  if (!startable) return;
  const { command, args, options } = guardProcess();
  const child: ChildProcessByStdio<Writable, null, null> = spawn(command, args, options);
  const running = { pid: child.pid, input: child.stdin };
  let spawned = false;
  child.once('spawn', () => {
    spawned = true;
  });
  child.on('error', () => {
    if (!spawned) startable = false;
    if (current === running) current = undefined;
  });
  child.on('exit', (_code, signal) => {
    if (current === running) current = undefined;
    // Only a killed guard is replaced: one that exited on its own would do so again.
    if (spawned && signal !== null && held.size > 0) start();
  });
  // Lines written to a guard that died are told again to the next one.
  child.stdin.on('error', () => undefined);
  child.unref();
  // The pipe's handle too: the guard lives as long as this process and must not keep it running.
  (child.stdin as Writable & { unref?: () => void }).unref?.();
  current = running;
  child.stdin.write([...held.values()].join(''));
}

function hold(id: number, lines: string): void {
  held.set(id, (held.get(id) ?? '') + lines);
  if (current === undefined) start();
  else current.input.write(lines);
}

function release(id: number): void {
  if (held.delete(id)) current?.input.write(releaseLine(id));
}

/**
 * Guards what a Runtime Server started or made against its own death: the guard (one
 * tiny shell process per Runtime Server, outside its process group: its own session, so a
 * signal to that group spares it) kills the item's process group and removes its path when
 * the pipe from the Runtime Server closes while the item is not released. A Runtime Server
 * killed with SIGKILL cannot clean up itself, and a container that outlives it (a shared
 * process namespace, a runtime that signals only the main process) would keep the
 * processes running and the temporary directories on its disk. The pipe is close-on-exec:
 * no process the Runtime Server starts holds it. Never keeps the event loop alive.
 */
export function guard(options: GuardOptions): Guard {
  const id = ++lastId;
  // Checked before anything is written: a bad item throws here, not later in the guard.
  const first =
    (options.killGroup === undefined ? '' : holdLine(id, { group: options.killGroup })) +
    (options.killUid === undefined ? '' : holdLine(id, { uid: options.killUid })) +
    (options.removePath === undefined ? '' : holdLine(id, { path: options.removePath }));
  let released = false;
  if (first !== '') hold(id, first);
  return {
    group(pgid) {
      const line = holdLine(id, { group: pgid });
      if (!released) hold(id, line);
    },
    release() {
      released = true;
      release(id);
    },
  };
}
