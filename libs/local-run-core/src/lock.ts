import { createHash } from 'node:crypto';
import { parseJsonObject } from '@kruntimes/api';
import type { RunSpec, RuntimeLanguage } from '@kruntimes/api';

/** The version of the lock file format (docs/local-mode.md). */
export const LOCK_VERSION = 1;

/** `sha256:<64 hex>` of bytes or a string's UTF-8. */
export function sha256Digest(data: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** JSON with object keys sorted at every level: one text per value, so one digest. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, sortKeys(v)]));
  }
  return value;
}

/** Where the source of a locked run came from, and the digest of its text. */
export type LockedSource =
  { inline: { digest: string } } | { configMapKeyRef: { namespace: string; name: string; key: string; digest: string; bytes: number } };

/**
 * A lock file (`.krt/locks/<run file>.lock.json`): every input of a local task run,
 * resolved and pinned by digest. Deterministic (no time in it): locking the same inputs
 * twice writes the same file, with the same lockDigest.
 */
export interface RunLock {
  lockVersion: typeof LOCK_VERSION;
  /** The run file's name (the lock sits in `.krt/locks/` beside it). */
  runFile: string;
  language: RuntimeLanguage;
  source: LockedSource;
  /** spec.env, as canonical JSON. */
  env: { digest: string };
  /** spec.mode.task.args, as canonical JSON. */
  args: { digest: string };
  /** Everything else of the spec (runtime, mode, timeout, retryPolicy, artifacts, ...), as canonical JSON. */
  spec: { digest: string };
}

/** What a run file resolves to now: the inputs as they would be locked. */
export interface ResolvedInputs {
  runFile: string;
  language: RuntimeLanguage;
  /** configMapKeyRef without `digest`: at run time the cluster is not read (the lock pins the text). */
  source: LockedSource | { configMapKeyRef: { namespace: string | undefined; name: string; key: string } };
  env: { digest: string };
  args: { digest: string };
  spec: { digest: string };
}

/** The digests of a spec's inputs other than a ConfigMap's text (which only the cluster has). */
export function resolveInputs(
  spec: RunSpec,
  options: { runFile: string; language: RuntimeLanguage; namespace: string | undefined },
): ResolvedInputs {
  const { source, env, mode, ...rest } = spec;
  const { args, ...task } = mode.task ?? {};
  const others = { ...rest, mode: { ...mode, ...(mode.task === undefined ? {} : { task }) } };
  const ref = source.configMapKeyRef;
  return {
    runFile: options.runFile,
    language: options.language,
    source:
      ref === undefined
        ? { inline: { digest: sha256Digest(source.inline ?? '') } }
        : { configMapKeyRef: { namespace: options.namespace, name: ref.name, key: ref.key } },
    env: { digest: sha256Digest(canonicalJson(env ?? [])) },
    args: { digest: sha256Digest(canonicalJson(args ?? [])) },
    spec: { digest: sha256Digest(canonicalJson(others)) },
  };
}

/** A lock of resolved inputs, given the ConfigMap text read from the cluster (when the source is one). */
export function lockOf(resolved: ResolvedInputs, configMapText?: { namespace: string; text: string }): RunLock {
  let source: LockedSource;
  if ('inline' in resolved.source) {
    source = resolved.source;
  } else {
    if (configMapText === undefined) throw new Error('a configMapKeyRef source is locked with the text read from the cluster');
    const { name, key } = resolved.source.configMapKeyRef;
    source = {
      configMapKeyRef: {
        namespace: configMapText.namespace,
        name,
        key,
        digest: sha256Digest(configMapText.text),
        bytes: Buffer.byteLength(configMapText.text),
      },
    };
  }
  return {
    lockVersion: LOCK_VERSION,
    runFile: resolved.runFile,
    language: resolved.language,
    source,
    env: resolved.env,
    args: resolved.args,
    spec: resolved.spec,
  };
}

/** The digest that names a lock (recorded in status.json and a synced Run's spec.origin). */
export function lockDigest(lock: RunLock): string {
  return sha256Digest(canonicalJson(lock));
}

/** One way the resolved inputs differ from the lock. */
export interface LockChange {
  input: 'lockVersion' | 'runFile' | 'language' | 'source' | 'env' | 'args' | 'spec';
  detail: string;
}

/**
 * How the inputs resolved now differ from the lock (empty: they match). A ConfigMap
 * source matches when it names the same ConfigMap key (the namespace too, when the run
 * file or -n names one): its text is the one pinned by the lock, not re-read.
 */
export function compareLock(locked: RunLock, now: ResolvedInputs): LockChange[] {
  const changes: LockChange[] = [];
  // A lock file written by another krt may hold another version whatever the type says.
  const version: number = locked.lockVersion;
  if (version !== LOCK_VERSION) {
    changes.push({ input: 'lockVersion', detail: `the lock has format ${String(version)}, krt writes ${LOCK_VERSION}` });
  }
  if (locked.runFile !== now.runFile) changes.push({ input: 'runFile', detail: `locked for ${locked.runFile}, not ${now.runFile}` });
  if (locked.language !== now.language) changes.push({ input: 'language', detail: `locked ${locked.language}, now ${now.language}` });
  const sourceChange = compareSource(locked.source, now.source);
  if (sourceChange !== undefined) changes.push({ input: 'source', detail: sourceChange });
  for (const input of ['env', 'args', 'spec'] as const) {
    if (locked[input].digest !== now[input].digest) {
      changes.push({
        input,
        detail: `${INPUT_NAMES[input]} changed (locked ${short(locked[input].digest)}, now ${short(now[input].digest)})`,
      });
    }
  }
  return changes;
}

const INPUT_NAMES = {
  env: 'spec.env',
  args: 'spec.mode.task.args',
  spec: 'the rest of the spec (runtime, mode, timeout, retryPolicy, artifacts)',
} as const;

function compareSource(locked: LockedSource, now: ResolvedInputs['source']): string | undefined {
  if ('inline' in locked) {
    if ('inline' in now) {
      return locked.inline.digest === now.inline.digest
        ? undefined
        : `spec.source.inline changed (locked ${short(locked.inline.digest)}, now ${short(now.inline.digest)})`;
    }
    return `the source is now spec.source.configMapKeyRef ${refText(now.configMapKeyRef)}, locked spec.source.inline`;
  }
  const lockedRef = locked.configMapKeyRef;
  if ('inline' in now) return `the source is now spec.source.inline, locked spec.source.configMapKeyRef ${refText(lockedRef)}`;
  const ref = now.configMapKeyRef;
  const sameNamespace = ref.namespace === undefined || ref.namespace === lockedRef.namespace;
  if (sameNamespace && ref.name === lockedRef.name && ref.key === lockedRef.key) {
    if ('digest' in ref && ref.digest !== lockedRef.digest) {
      return `the ConfigMap text changed (locked ${short(lockedRef.digest)}, now ${short(ref.digest)})`;
    }
    return undefined;
  }
  return `spec.source.configMapKeyRef is now ${refText(ref)}, locked ${refText(lockedRef)}`;
}

function refText(ref: { namespace: string | undefined; name: string; key: string }): string {
  return `${ref.namespace ?? '(namespace as locked)'}/${ref.name} key ${ref.key}`;
}

/** `sha256:` and the first 12 hex digits: enough to tell two digests apart in a message. */
function short(digest: string): string {
  return digest.slice(0, 'sha256:'.length + 12);
}

/** One line for the user: what changed, and how to re-lock. */
export function lockMismatchMessage(lockFile: string, changes: readonly LockChange[]): string {
  return `the run file does not match its lock ${lockFile}: ${changes.map((change) => change.detail).join('; ')}. Nothing was run. If the change is intended, re-lock with --update-lock`;
}

/** Parses a lock file's JSON; undefined when it is not a lock of this format. */
export function parseLock(text: string): RunLock | undefined {
  const value = parseJsonObject(text);
  if (value === undefined) return undefined;
  const lock = value as Partial<RunLock>;
  const digestOk = (field: { digest?: unknown } | undefined): boolean => typeof field?.digest === 'string';
  if (typeof lock.lockVersion !== 'number' || typeof lock.runFile !== 'string' || typeof lock.language !== 'string') return undefined;
  if (lock.source === undefined || !digestOk(lock.env) || !digestOk(lock.args) || !digestOk(lock.spec)) return undefined;
  const source = lock.source as Partial<{ inline: { digest?: unknown }; configMapKeyRef: Record<string, unknown> }>;
  if (!digestOk(source.inline) && typeof source.configMapKeyRef?.digest !== 'string') return undefined;
  return lock as RunLock;
}
