import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_REASONS, boundedMessage } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { runtimeServerV1 } from '@kruntimes/proto';
import { TransitionRefusedError } from '@kruntimes/run-state';
import type { Logger } from 'pino';
import type { TaskOutcome } from './metrics.ts';
import { decideOutcomeRecord } from './plan.ts';
import type { ResumeLoad } from './resume.ts';
import { NotOwnerError } from './run-client.ts';

/**
 * How an attempt that ran on this Pod ended: what it takes to write its outcome (the same
 * steps, from the Run as it is when the write is made).
 */
export type AttemptEnd =
  /** The Runtime Server reported the exit: the message it sent. */
  | { type: 'exited'; exited: runtimeServerV1.ExecutionExited }
  /**
   * Cut short by the platform (the execution was lost, runtimed restarted while it ran).
   * `reason`: a cause more specific than a lost owner (the Runtime Server's own death).
   */
  | { type: 'interrupted'; message: string; reason?: typeof RUN_REASONS.runtimeServerLost }
  /** A continuation that could not start from its checkpoint. */
  | { type: 'resumeFailed'; load: Extract<ResumeLoad, { type: 'failed' | 'interrupted' }> };

/** The end of one attempt, kept on the Pod until its outcome is written. */
export interface OutcomeRecord {
  uid: string;
  attempt: number;
  end: AttemptEnd;
}

const VERSION = 1;

/**
 * A record holds at most one ExecutionExited, which reached runtimed in one gRPC message
 * (grpc-js receives at most 4 MiB), base64 in the record, plus bounded messages. Under the
 * invoke contract's output bounds a record is about 100 KB at most; anything larger on
 * disk is not one this code wrote.
 */
export const MAX_OUTCOME_RECORD_BYTES = Math.ceil(((4 * 1024 * 1024) / 3) * 4) + 16 * 1024;

const UID = /^[0-9a-z-]{1,64}$/;
const FILE = /^([0-9a-z-]{1,64})\.([1-9][0-9]{0,8})\.json$/;
const TEMP_SUFFIX = '.tmp';

/** A record that exists but cannot be used: how the attempt ended is unknown. */
export class OutcomeRecordUnreadableError extends KruntimesError {
  constructor(uid: string, attempt: number, detail: string, cause?: unknown) {
    super('Internal', `the record of how attempt ${String(attempt)} of Run ${uid} ended is unreadable: ${detail}`, {
      ...(cause === undefined ? {} : { cause }),
    });
    this.name = 'OutcomeRecordUnreadableError';
  }
}

/** Pure: the record as stored (JSON; the exit as the protobuf bytes it came in). Messages are bounded like status messages. */
export function encodeOutcomeRecord({ uid, attempt, end }: OutcomeRecord): string {
  const stored = { version: VERSION, uid, attempt, end: storedEnd(end) };
  const text = JSON.stringify(stored);
  if (Buffer.byteLength(text) > MAX_OUTCOME_RECORD_BYTES) {
    throw new KruntimesError(
      'Internal',
      `the record of how attempt ${String(attempt)} of Run ${uid} ended is ${String(Buffer.byteLength(text))} bytes, over ${String(MAX_OUTCOME_RECORD_BYTES)}`,
    );
  }
  return text;
}

function storedEnd(end: AttemptEnd): unknown {
  switch (end.type) {
    case 'exited': {
      const exited = { ...end.exited, message: boundedMessage(end.exited.message), outputsError: boundedMessage(end.exited.outputsError) };
      return { type: 'exited', exited: Buffer.from(runtimeServerV1.ExecutionExited.encode(exited).finish()).toString('base64') };
    }
    case 'interrupted':
      return { type: 'interrupted', message: boundedMessage(end.message), ...(end.reason === undefined ? {} : { reason: end.reason }) };
    case 'resumeFailed':
      return { type: 'resumeFailed', load: { ...end.load, message: boundedMessage(end.load.message) } };
  }
}

/**
 * Pure: a stored record, checked field by field against the attempt its file is named for.
 * Anything else is an OutcomeRecordUnreadableError, never a guess.
 */
export function decodeOutcomeRecord(text: string, uid: string, attempt: number): OutcomeRecord {
  const bad = (detail: string, cause?: unknown): OutcomeRecordUnreadableError =>
    new OutcomeRecordUnreadableError(uid, attempt, detail, cause);
  if (Buffer.byteLength(text) > MAX_OUTCOME_RECORD_BYTES) throw bad(`over ${String(MAX_OUTCOME_RECORD_BYTES)} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw bad(`not JSON (${error instanceof Error ? error.message : String(error)})`, error);
  }
  if (!isObject(parsed)) throw bad('not a JSON object');
  if (parsed.version !== VERSION) throw bad(`version ${JSON.stringify(parsed.version)}, not ${String(VERSION)}`);
  if (parsed.uid !== uid || parsed.attempt !== attempt) {
    throw bad(`it names Run ${JSON.stringify(parsed.uid)} attempt ${JSON.stringify(parsed.attempt)}`);
  }
  const { end } = parsed;
  if (!isObject(end)) throw bad('no end');
  switch (end.type) {
    case 'exited': {
      if (typeof end.exited !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(end.exited)) throw bad('end.exited is not base64');
      try {
        return { uid, attempt, end: { type: 'exited', exited: runtimeServerV1.ExecutionExited.decode(Buffer.from(end.exited, 'base64')) } };
      } catch (error) {
        throw bad(`end.exited is not an ExecutionExited (${error instanceof Error ? error.message : String(error)})`, error);
      }
    }
    case 'interrupted':
      if (typeof end.message !== 'string') throw bad('end.message is not a string');
      // Absent in a record of a runtimed before the reason existed: the generic one.
      if (end.reason === undefined) return { uid, attempt, end: { type: 'interrupted', message: end.message } };
      if (end.reason !== RUN_REASONS.runtimeServerLost) throw bad(`end.reason ${JSON.stringify(end.reason)} is not an interrupt reason`);
      return { uid, attempt, end: { type: 'interrupted', message: end.message, reason: end.reason } };
    case 'resumeFailed': {
      const { load } = end;
      if (!isObject(load) || typeof load.message !== 'string') throw bad('end.load has no message');
      if (load.type === 'interrupted')
        return { uid, attempt, end: { type: 'resumeFailed', load: { type: 'interrupted', message: load.message } } };
      if (load.type === 'failed' && (load.reason === RUN_REASONS.artifactMissing || load.reason === RUN_REASONS.artifactInvalid)) {
        return { uid, attempt, end: { type: 'resumeFailed', load: { type: 'failed', reason: load.reason, message: load.message } } };
      }
      throw bad(`end.load is not a failed resume (${JSON.stringify(load.type)}, ${JSON.stringify(load.reason)})`);
    }
    default:
      throw bad(`unknown end type ${JSON.stringify(end.type)}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The ends of attempts kept on the Pod, one file per attempt (`<uid>.<attempt>.json`) in a
 * directory of the workspace emptyDir, which outlives runtimed's container: written before
 * the attempt's workspace is removed and removed once the outcome is written (or the Run
 * went on without it). A restarted runtimed finds in them the attempts that already ran
 * here. Which records exist is indexed in memory, read from the directory on first use;
 * only this process writes there.
 */
export class OutcomeRecords {
  readonly #dir: () => Promise<string>;
  #index: Promise<Map<string, Set<number>>> | undefined;

  /** `dir`: the directory of the records (created on the first save). */
  constructor(dir: () => Promise<string>) {
    this.#dir = dir;
  }

  /** The attempts of a Run that have a record. */
  async attempts(uid: string): Promise<number[]> {
    return [...((await this.#load()).get(uid) ?? [])];
  }

  /** Every Run UID with a record. */
  async uids(): Promise<string[]> {
    return [...(await this.#load()).keys()];
  }

  /** Writes the record whole or not at all (a rename): a runtimed killed meanwhile leaves no half of it. */
  async save(record: OutcomeRecord): Promise<void> {
    const text = encodeOutcomeRecord(record);
    const index = await this.#load();
    const path = await this.#path(record.uid, record.attempt);
    await mkdir(await this.#dir(), { recursive: true, mode: 0o700 });
    await writeFile(path + TEMP_SUFFIX, text, { mode: 0o600 });
    await rename(path + TEMP_SUFFIX, path);
    let attempts = index.get(record.uid);
    if (attempts === undefined) index.set(record.uid, (attempts = new Set()));
    attempts.add(record.attempt);
  }

  /** The record, undefined when there is none; OutcomeRecordUnreadableError when it cannot be used. */
  async read(uid: string, attempt: number): Promise<OutcomeRecord | undefined> {
    const path = await this.#path(uid, attempt);
    let text: string;
    try {
      const { size } = await stat(path);
      if (size > MAX_OUTCOME_RECORD_BYTES) throw new OutcomeRecordUnreadableError(uid, attempt, `${String(size)} bytes`);
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.#forget(await this.#load(), uid, attempt);
      return undefined;
    }
    return decodeOutcomeRecord(text, uid, attempt);
  }

  /** Removes the record (idempotent). */
  async remove(uid: string, attempt: number): Promise<void> {
    await rm(await this.#path(uid, attempt), { force: true });
    this.#forget(await this.#load(), uid, attempt);
  }

  async #path(uid: string, attempt: number): Promise<string> {
    if (!UID.test(uid) || !Number.isSafeInteger(attempt) || attempt < 1) {
      throw new KruntimesError('InvalidRequest', `no outcome record for Run ${JSON.stringify(uid)} attempt ${String(attempt)}`, {
        terminal: true,
      });
    }
    return join(await this.#dir(), `${uid}.${String(attempt)}.json`);
  }

  #forget(index: Map<string, Set<number>>, uid: string, attempt: number): void {
    const attempts = index.get(uid);
    attempts?.delete(attempt);
    if (attempts?.size === 0) index.delete(uid);
  }

  #load(): Promise<Map<string, Set<number>>> {
    this.#index ??= this.#scan().catch((error: unknown) => {
      // Not cached: the next use reads the directory again.
      this.#index = undefined;
      throw error;
    });
    return this.#index;
  }

  async #scan(): Promise<Map<string, Set<number>>> {
    const dir = await this.#dir();
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw error;
    }
    const index = new Map<string, Set<number>>();
    for (const name of names) {
      // A save cut short by a kill: its attempt's write had not started (the record comes first).
      if (name.endsWith(TEMP_SUFFIX)) {
        await rm(join(dir, name), { force: true });
        continue;
      }
      const match = FILE.exec(name);
      if (match?.[1] === undefined || match[2] === undefined) continue;
      const attempt = Number(match[2]);
      let attempts = index.get(match[1]);
      if (attempts === undefined) index.set(match[1], (attempts = new Set()));
      attempts.add(attempt);
    }
    return index;
  }
}

/** Far more task attempts than one Pod runs while a cache can lag behind them. */
export const MAX_REMEMBERED_EXECUTIONS = 10_000;

/** Counts an attempt's end in the metrics (once, however many times its outcome has to be written). */
export type Count = (outcome: TaskOutcome) => void;

/** An attempt that ended here, whose outcome is to be written. */
export interface Ended {
  record: OutcomeRecord;
  count: Count;
  /** Its record is on the Pod (saved by this process, or read from there after a restart). */
  saved?: boolean;
}

/** Counted by whoever saw the attempt end (a runtimed before a restart). */
export const COUNTED_BEFORE: Count = () => undefined;

/** The Run went on without this write: fenced (another epoch) or refused by the state machine. */
export function movedOn(error: unknown): error is NotOwnerError | TransitionRefusedError {
  return error instanceof NotOwnerError || error instanceof TransitionRefusedError;
}

/**
 * The ends of attempts that ran here with their outcome not yet written: kept in memory
 * when the outcome write failed (the API server down or unreachable), and recorded on the
 * Pod (OutcomeRecords), which is what a restarted runtimed has.
 */
export class UnwrittenOutcomes {
  /**
   * Attempts that ended here but whose outcome write failed, by `uid/attempt`: written by a
   * later reconcile, never lost to the lifetime timeout counted from startTime meanwhile.
   * Bounded; insertion order makes it a FIFO.
   */
  readonly #unwritten = new Map<string, Ended>();
  /**
   * How attempts ended, on the Pod: saved before the attempt's workspace is removed, removed
   * once the outcome is written or the Run went past the attempt.
   */
  readonly #records: OutcomeRecords;
  readonly #logger: Logger;

  /** `dir`: the directory of the records on the Pod. */
  constructor(dir: () => Promise<string>, logger: Logger) {
    this.#records = new OutcomeRecords(dir);
    this.#logger = logger;
  }

  /**
   * Whether the Run's current attempt has a record on the Pod. On the way, drops the
   * records of attempts the cached Run went past (decideOutcomeRecord).
   */
  async recordsCurrentAttempt(key: string, run: ReadonlyDeep<Run>): Promise<boolean> {
    const uid = run.metadata.uid ?? '';
    const attempt = run.status?.attempt ?? 0;
    let recorded = false;
    for (const recordedAttempt of await this.#records.attempts(uid)) {
      if (await this.#dropIfPast(uid, recordedAttempt, run, key)) continue;
      if (recordedAttempt === attempt) recorded = true;
    }
    return recorded;
  }

  /** The end kept in memory after its outcome write failed. */
  kept(uid: string, attempt: number): Ended | undefined {
    return this.#unwritten.get(`${uid}/${String(attempt)}`);
  }

  /** Drops the records of Runs not in `runUids` (read only when there are records). */
  async dropRecordsOfGoneRuns(runUids: () => ReadonlySet<string>): Promise<void> {
    const uids = await this.#records.uids();
    if (uids.length === 0) return;
    const runs = runUids();
    for (const uid of uids) {
      if (runs.has(uid)) continue;
      for (const attempt of await this.#records.attempts(uid)) await this.#dropIfPast(uid, attempt, undefined, undefined);
    }
  }

  /** Removes the record (and the end kept in memory) when the Run went past the attempt; true if it did. */
  async #dropIfPast(uid: string, attempt: number, run: ReadonlyDeep<Run> | undefined, key: string | undefined): Promise<boolean> {
    const decision = decideOutcomeRecord({ uid, attempt }, run);
    if (decision.type === 'keep') return false;
    await this.#records.remove(uid, attempt);
    this.#unwritten.delete(`${uid}/${String(attempt)}`);
    this.#logger.info({ run: key, runUID: uid, attempt, why: decision.why }, 'outcome record dropped: the Run went on without it');
    return true;
  }

  /**
   * The attempt's end as recorded on the Pod (counted by the runtimed that saw it). A record
   * that cannot be read still proves that the attempt ran here and ended: it is never run
   * again, and since how it ended is unknown it is interrupted (retried only within the
   * policy for a lost owner), with the reason in the Run's message; that end replaces it.
   */
  async readRecord({ uid, attempt }: { uid: string; attempt: number }, log: Logger): Promise<Ended | undefined> {
    try {
      const record = await this.#records.read(uid, attempt);
      return record === undefined ? undefined : { record, count: COUNTED_BEFORE, saved: true };
    } catch (error) {
      if (!(error instanceof OutcomeRecordUnreadableError)) throw error;
      log.error({ err: error }, 'the outcome record is unreadable; the attempt is written as interrupted');
      const end: AttemptEnd = { type: 'interrupted', message: error.message };
      return { record: { uid, attempt, end }, count: COUNTED_BEFORE };
    }
  }

  /**
   * Writes an attempt's end: first its record on the Pod (before anything removes the
   * attempt's workspace, which marked that the attempt ran), then the outcome
   * (`writeOutcome`), then the record goes. Fenced or refused: the Run went on without this
   * outcome, which is never written (the record goes too). Any other failure keeps the end
   * in memory and on the Pod, and is thrown.
   */
  async write(ended: Ended, log: Logger, writeOutcome: (end: AttemptEnd, count: Count) => Promise<void>): Promise<void> {
    const { uid, attempt, end } = ended.record;
    const id = `${uid}/${String(attempt)}`;
    try {
      if (ended.saved !== true) await this.#records.save(ended.record);
      ended.saved = true;
      await writeOutcome(end, ended.count);
    } catch (error) {
      if (!movedOn(error)) {
        this.#keep(id, ended);
        throw error;
      }
      log.info({ reason: error.message }, 'task outcome not written: the Run moved on');
      this.#unwritten.delete(id);
      await this.#records.remove(uid, attempt);
      throw error;
    }
    this.#unwritten.delete(id);
    await this.#records.remove(uid, attempt);
  }

  #keep(id: string, ended: Ended): void {
    this.#unwritten.set(id, ended);
    if (this.#unwritten.size > MAX_REMEMBERED_EXECUTIONS) {
      const oldest = this.#unwritten.keys().next();
      if (oldest.done !== true) this.#unwritten.delete(oldest.value);
    }
  }
}
