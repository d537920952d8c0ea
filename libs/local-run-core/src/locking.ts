import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { RuntimeLanguage } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { compareLock, lockMismatchMessage, lockOf, parseLock, resolveInputs, sha256Digest } from './lock.ts';
import type { RunLock } from './lock.ts';
import { cachedSourcePath, statePaths } from './run-dir.ts';
import type { LocalRunFile } from './run-file.ts';

export interface PinOptions {
  /** The run file as given (its directory holds `.krt/`). */
  runFilePath: string;
  runFile: LocalRunFile;
  language: RuntimeLanguage;
  /** `-n`: the namespace of a configMapKeyRef source when the run file names none. */
  namespace: string | undefined;
  /** `--update-lock`: resolve again (reading the cluster for a ConfigMap source) and rewrite the lock. */
  updateLock: boolean;
  /**
   * Reads a ConfigMap key with the user's kubeconfig: called only when locking a
   * configMapKeyRef source (never on a run that matches its lock). `namespace` undefined:
   * the kubeconfig context's.
   */
  readConfigMap: (namespace: string | undefined, name: string, key: string) => Promise<{ namespace: string; text: string }>;
}

export interface PinnedInputs {
  lock: RunLock;
  lockFile: string;
  /** The source text the lock pins. */
  source: string;
  /** `created`: there was no lock; `updated`: --update-lock rewrote it; `matched`: the inputs match it. */
  how: 'created' | 'updated' | 'matched';
}

/**
 * Resolves a run file's source and inputs and pins them: without a lock (or with
 * --update-lock) they are locked now (a ConfigMap source read once from the cluster,
 * its text kept in `.krt/cache`); with one, they must match it, or LockMismatch names
 * what changed and nothing runs.
 */
export async function pinInputs(options: PinOptions): Promise<PinnedInputs> {
  const { stateDir, lockFile } = statePaths(options.runFilePath);
  const resolved = resolveInputs(options.runFile.spec, {
    runFile: basename(options.runFilePath),
    language: options.language,
    namespace: options.runFile.namespace ?? options.namespace,
  });
  const existingText = await readFile(lockFile, 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  });
  if (existingText !== undefined && !options.updateLock) {
    const locked = parseLock(existingText);
    if (locked === undefined)
      throw new KruntimesError('LockMismatch', `${lockFile} is not a lock file krt can read; re-lock with --update-lock`);
    const changes = compareLock(locked, resolved);
    if (changes.length > 0) throw new KruntimesError('LockMismatch', lockMismatchMessage(lockFile, changes));
    const source =
      'inline' in locked.source
        ? (options.runFile.spec.source.inline ?? '')
        : await cachedSource(stateDir, locked.source.configMapKeyRef.digest, lockFile);
    return { lock: locked, lockFile, source, how: 'matched' };
  }
  let lock: RunLock;
  let source: string;
  if ('inline' in resolved.source) {
    lock = lockOf(resolved);
    source = options.runFile.spec.source.inline ?? '';
  } else {
    const { namespace, name, key } = resolved.source.configMapKeyRef;
    const read = await options.readConfigMap(namespace, name, key);
    lock = lockOf(resolved, read);
    source = read.text;
    await writeAtomically(cachedSourcePath(stateDir, sha256Digest(source)), source);
  }
  await writeAtomically(lockFile, `${JSON.stringify(lock, null, 2)}\n`);
  return { lock, lockFile, source, how: existingText === undefined ? 'created' : 'updated' };
}

/** The ConfigMap text a lock pins, from the cache, checked against its digest. */
async function cachedSource(stateDir: string, digest: string, lockFile: string): Promise<string> {
  const path = cachedSourcePath(stateDir, digest);
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (text === undefined || sha256Digest(text) !== digest) {
    throw new KruntimesError(
      'LockMismatch',
      `the source text ${lockFile} pins (${digest}) is ${text === undefined ? 'not' : 'no longer'} in ${path}; re-lock with --update-lock (reads the ConfigMap again)`,
    );
  }
  return text;
}

async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.tmp-${String(process.pid)}`;
  await writeFile(temp, text, { mode: 0o644 });
  await rename(temp, path);
}
