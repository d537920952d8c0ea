import { mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists } from '@kruntimes/host';
import { SOURCE_SNAPSHOT } from '@kruntimes/api';
import type { Run, RuntimeLanguage } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import { entrypointFile } from '@kruntimes/run-state';
import { snapshotMismatch } from '@kruntimes/snapshot-core';

/**
 * The source of an attempt is not the Run's snapshot (status.source): other bytes, or the
 * snapshot ConfigMap is gone. Terminal: the snapshot is immutable, so another attempt
 * would read the same bytes, and running anything else is what the snapshot prevents.
 */
export class SourceMismatchError extends KruntimesError {
  constructor(message: string) {
    super('SourceMismatch', message, { terminal: true });
    this.name = 'SourceMismatchError';
  }
}

/**
 * Every directory runtimed makes in the workspace: the Runtime Server reads them (its own
 * user, or root of the Pod's user namespace), a Run never does, even where the volume's root
 * lets everyone list it (an emptyDir is 0777); a Run is given a copy of its own source.
 */
const PRIVATE_DIR_MODE = 0o700;

/** Reads `spec.source.configMapKeyRef`; injected so that tests of pure code need no API. */
export type ConfigMapReader = (namespace: string, name: string, key: string) => Promise<string>;

/**
 * Per-Run, per-attempt workspaces under one directory shared with the Runtime Server (an
 * emptyDir mounted at the same path in both containers). The path is a pure function of
 * Run UID and attempt, so a restarted runtimed registers with exactly the configuration
 * it used before and the Runtime Server answers with the same registration ID.
 */
export class Workspaces {
  readonly #root: string;
  #resolvedRoot: string | undefined;

  /** `root` is the directory on this machine (the container path under the local node's container root). */
  constructor(root: string) {
    this.#root = root;
  }

  /**
   * The real path of the root: on the local node a container path is a symlink into the
   * Pod's volume directory, and the Runtime Server (another "container") must be given a
   * path it can open too; in a real Pod the real path is the mount path itself.
   */
  async root(): Promise<string> {
    if (this.#resolvedRoot === undefined) {
      await mkdir(this.#root, { recursive: true });
      this.#resolvedRoot = await realpath(this.#root);
    }
    return this.#resolvedRoot;
  }

  async runDir(runUID: string): Promise<string> {
    return join(await this.root(), safeSegment(runUID));
  }

  async attemptDir(runUID: string, attempt: number): Promise<string> {
    return join(await this.runDir(runUID), String(attempt));
  }

  /**
   * Where the ends of attempts are recorded until their outcome is written (outcome-record.ts):
   * beside the Runs' directories, in the emptyDir that outlives runtimed's container, under
   * a name no Run UID can take. Removing a Run's workspace leaves its records.
   */
  async outcomesDir(): Promise<string> {
    return join(await this.root(), '.outcomes');
  }

  /**
   * Writes the Run's snapshot (status.source) into its attempt's workspace, after checking
   * its sha256 against the recorded digest; returns the workspace path. Throws
   * SourceMismatchError, having written nothing, when the bytes are not the snapshot's.
   */
  async prepare(run: ReadonlyDeep<Run>, attempt: number, language: RuntimeLanguage, readConfigMap: ConfigMapReader): Promise<string> {
    const uid = run.metadata.uid ?? '';
    const dir = await this.attemptDir(uid, attempt);
    const source = await sourceText(run, readConfigMap);
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    await writeFile(join(dir, entrypointFile(language)), source, { mode: 0o644 });
    return dir;
  }

  /** Deletes every attempt's workspace of a Run (idempotent). */
  /** Removes the Run's workspace; false when there was none (a repeated cleanup). */
  async remove(runUID: string): Promise<boolean> {
    const dir = await this.runDir(runUID);
    const existed = await pathExists(dir);
    await rm(dir, { recursive: true, force: true });
    return existed;
  }
}

async function sourceText(run: ReadonlyDeep<Run>, readConfigMap: ConfigMapReader): Promise<string> {
  const { inline, configMapKeyRef } = run.spec.source;
  const snapshot = run.status?.source;
  if (snapshot !== undefined) {
    const namespace = run.metadata.namespace ?? '';
    const where = snapshot.configMapName === undefined ? 'spec.source.inline' : `snapshot ConfigMap ${snapshot.configMapName}`;
    let text: string;
    if (snapshot.configMapName === undefined) {
      if (inline === undefined) throw new SourceMismatchError('status.source names no snapshot ConfigMap, and the source is not inline');
      text = inline;
    } else {
      try {
        text = await readConfigMap(namespace, snapshot.configMapName, SOURCE_SNAPSHOT.key);
      } catch (error) {
        if (!isSnapshotGone(error)) throw error;
        throw new SourceMismatchError(`${where} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const mismatch = snapshotMismatch(text, snapshot);
    if (mismatch !== undefined) throw new SourceMismatchError(`${where}: ${mismatch}`);
    return text;
  }
  // A Run bound before snapshots existed (docs/lifecycle.md "Source snapshot"): its
  // attempt in progress reads spec.source as it did; any next attempt passes Pending, where
  // it gets its snapshot before it is bound again.
  if (inline !== undefined) return inline;
  if (configMapKeyRef !== undefined) return readConfigMap(run.metadata.namespace ?? '', configMapKeyRef.name, configMapKeyRef.key);
  throw new KruntimesError('InvalidRequest', 'spec.source has neither inline nor configMapKeyRef', { terminal: true });
}

/** The snapshot ConfigMap or its key is missing (404, or the reader's InvalidRequest); anything else may pass. */
function isSnapshotGone(error: unknown): boolean {
  if (isKruntimesError(error, 'InvalidRequest')) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === 404;
}

/** A UID is a fixed-format token; anything else must not become a path. */
function safeSegment(value: string): string {
  if (!/^[0-9a-z-]{1,64}$/.test(value))
    throw new KruntimesError('InvalidRequest', `not a safe path segment: ${JSON.stringify(value)}`, { terminal: true });
  return value;
}

// Pure, shared with `krt run --local`: they live in run-state.
export { entrypointFile, runEnv } from '@kruntimes/run-state';
