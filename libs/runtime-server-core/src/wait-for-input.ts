import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { BOUNDS, utf8ByteLength } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { compileInputSchema } from '@kruntimes/input-core';
import type { Logger } from 'pino';
import type { ArtifactGrantsClient } from './artifact-grants-client.ts';
import { putCheckpoint } from './checkpoint-upload.ts';

/** The checkpoint travels base64-encoded in the JSON body. */
const CHECKPOINT_BASE64_CHARS = 4 * Math.ceil(BOUNDS.checkpointBytes / 3);
/**
 * A wait request body larger than this is refused before it is read whole: a checkpoint
 * at its bound, a schema at its bound even if every byte were written as a `\uXXXX`
 * escape, and the field names.
 */
export const WAIT_REQUEST_BYTES = CHECKPOINT_BASE64_CHARS + 6 * BOUNDS.inputSchemaBytes + 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** AwaitInput is bounded by its own deadline only. */
const NEVER = new AbortController().signal;
const FIELDS = new Set(['schema', 'checkpoint']);

/** POST /v1/wait-for-input, checked: what runtimed is asked to record. */
export interface WaitRequest {
  readonly schemaJson: string;
  readonly checkpoint: Buffer;
  /** Lowercase hex SHA-256 of the checkpoint, computed here (user code's word is not taken). */
  readonly sha256: string;
}

/**
 * Checks a wait request body `{"schema": <JSON Schema>, "checkpoint": "<base64>"}`
 * against the bounds before anything reaches runtimed: InvalidRequest (malformed),
 * CheckpointTooLarge, InputSchemaInvalid (over its bound, or not a JSON Schema).
 */
export function parseWaitRequest(body: unknown): WaitRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new KruntimesError('InvalidRequest', 'the body must be a JSON object {schema, checkpoint}');
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((key) => !FIELDS.has(key));
  if (unknown.length > 0) throw new KruntimesError('InvalidRequest', `unknown fields: ${unknown.slice(0, 4).join(', ')}`);
  const { schema, checkpoint } = fields;
  if (typeof checkpoint !== 'string' || checkpoint.length % 4 !== 0 || !BASE64.test(checkpoint)) {
    throw new KruntimesError('InvalidRequest', 'checkpoint must be the checkpoint bytes in base64');
  }
  if (checkpoint.length > CHECKPOINT_BASE64_CHARS) {
    throw new KruntimesError('CheckpointTooLarge', `the checkpoint is over ${String(BOUNDS.checkpointBytes)} bytes`);
  }
  const bytes = Buffer.from(checkpoint, 'base64');
  if (bytes.byteLength > BOUNDS.checkpointBytes) {
    throw new KruntimesError(
      'CheckpointTooLarge',
      `the checkpoint is ${String(bytes.byteLength)} bytes, over ${String(BOUNDS.checkpointBytes)}`,
    );
  }
  if (schema === undefined) throw new KruntimesError('InvalidRequest', 'schema is missing: a JSON Schema (an object or a boolean)');
  const schemaJson = JSON.stringify(schema);
  if (utf8ByteLength(schemaJson) > BOUNDS.inputSchemaBytes) {
    throw new KruntimesError(
      'InputSchemaInvalid',
      `the input schema is ${String(utf8ByteLength(schemaJson))} bytes as JSON, over ${String(BOUNDS.inputSchemaBytes)}`,
    );
  }
  // The check runtimed makes too: a schema it would refuse is refused before the upload.
  const compiled = compileInputSchema(schemaJson);
  if (!compiled.ok) throw new KruntimesError('InputSchemaInvalid', compiled.problem);
  return { schemaJson, checkpoint: bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** How the execution learns that runtimed recorded its wait for input (POST /v1/wait-for-input). */
export interface SessionHooks {
  /** Before user code is answered: the attempt is over, whatever happens next. */
  waiting(attempt: number): void;
  /** Once user code has the answer (or its connection is gone): time to end the process group. */
  answered(): void;
}

export interface InputWaitOptions {
  readonly grants: ArtifactGrantsClient;
  readonly grantToken: string;
  /** Aborted when the execution's process has exited: a wait not yet at runtimed is abandoned. */
  readonly ended: AbortSignal;
  readonly logger: Logger;
}

/**
 * The wait for input of one execution: at most one in flight, none after one
 * succeeded (a refused one may be tried again). It stores the checkpoint through
 * runtimed's grant, then asks runtimed to record the wait. Once AwaitInput has been
 * sent it is never abandoned, whatever happens to the process: its answer decides
 * whether the attempt ended waiting, and `settled()` lets the execution's ending wait for it.
 */
export class InputWait {
  readonly #o: InputWaitOptions;
  #state: 'idle' | 'inFlight' | 'waiting' = 'idle';
  #attempt: number | undefined;
  #settled: Promise<void> = Promise.resolve();

  constructor(options: InputWaitOptions) {
    this.#o = options;
  }

  /** The attempt runtimed recorded as waiting; undefined while none is. */
  get waitingAttempt(): number | undefined {
    return this.#attempt;
  }

  /** Resolves when no wait is in flight. */
  settled(): Promise<void> {
    return this.#settled;
  }

  /**
   * Claims the execution's wait before its body is read (so that a second one costs
   * nothing), then runs it with the checked request `read` returns. Resolves with the
   * waiting attempt, after `waiting` was told (before `settled()` resolves); rejects
   * with the refusal, after which the execution goes on.
   */
  async run(read: () => Promise<WaitRequest>, waiting: (attempt: number) => void): Promise<number> {
    if (this.#state === 'inFlight') {
      throw new KruntimesError('InvalidRequest', 'this execution is already waiting for input: one wait at a time');
    }
    if (this.#state === 'waiting') {
      throw new KruntimesError('InvalidRequest', `this execution already waits for input (attempt ${String(this.#attempt)}): it is ending`);
    }
    this.#state = 'inFlight';
    let settle = (): void => undefined;
    this.#settled = new Promise((resolve) => {
      settle = resolve;
    });
    try {
      const attempt = await this.#wait(await read());
      this.#attempt = attempt;
      this.#state = 'waiting';
      waiting(attempt);
      return attempt;
    } catch (error) {
      this.#state = 'idle';
      throw error;
    } finally {
      settle();
    }
  }

  async #wait(request: WaitRequest): Promise<number> {
    const { grants, grantToken, ended, logger } = this.#o;
    const size = request.checkpoint.byteLength;
    const log = logger.child({ checkpointSize: size, checkpointSha256: request.sha256 });
    try {
      assertRunning(ended);
      const grant = await abandonedWhenEnded(ended, grants.grantCheckpoint(grantToken, size, request.sha256, ended));
      log.debug({ expiresAt: grant.expiresAt }, 'checkpoint upload granted');
      await abandonedWhenEnded(ended, putCheckpoint(grant, request.checkpoint, ended));
      log.info('checkpoint stored');
      assertRunning(ended);
      // Not tied to `ended`: once asked, runtimed may record the wait whatever we do, so
      // the answer is awaited (bounded by the call's own deadline) and decides the ending.
      const attempt = await grants.awaitInput(grantToken, { size, sha256: request.sha256, schemaJson: request.schemaJson }, NEVER);
      log.info({ waitingAttempt: attempt }, 'runtimed recorded the wait for input');
      return attempt;
    } catch (error) {
      log.info({ code: (error as Partial<KruntimesError>).code ?? 'Internal' }, 'wait for input refused');
      throw error;
    }
  }
}

function assertRunning(ended: AbortSignal): void {
  if (ended.aborted) throw new KruntimesError('Unauthenticated', 'the execution has ended');
}

/** A step aborted because the execution ended says so, whatever the abort looked like. */
async function abandonedWhenEnded<T>(ended: AbortSignal, step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (error) {
    assertRunning(ended);
    throw error;
  }
}

/**
 * POST /v1/wait-for-input: `read` yields the body once the execution's wait is
 * claimed. Only an execution whose ending can say it waits (`hooks`) may.
 */
export async function waitForInput(wait: InputWait, hooks: SessionHooks | undefined, read: () => Promise<unknown>): Promise<number> {
  if (hooks === undefined) throw new KruntimesError('CheckpointUnsupported', 'this execution cannot wait for input');
  return wait.run(
    async () => parseWaitRequest(await read()),
    (attempt) => {
      hooks.waiting(attempt);
    },
  );
}

/** Ends the execution once user code has its answer, or is gone. */
export function endAfterAnswer(response: ServerResponse, hooks: SessionHooks | undefined): void {
  let called = false;
  const answered = (): void => {
    if (called) return;
    called = true;
    hooks?.answered();
  };
  response.once('finish', answered);
  response.once('close', answered);
  if (response.writableFinished || response.destroyed) answered();
}
