import type { Condition, ObjectMeta } from './meta.ts';

/**
 * Waiting for input (capability `checkpoint-v1`): a task stores a checkpoint as an
 * artifact of its attempt, the Run becomes WaitingInput (active, holding no capacity),
 * and a RunInput answers it; the answer continues the Run as a new attempt that is given
 * the checkpoint and the response. docs/waiting-input.md tells the whole story.
 */
export const RUN_INPUT_KIND = 'RunInput';
export const RUN_INPUT_PLURAL = 'runinputs';
export const RUN_INPUT_SINGULAR = 'runinput';
export const RUN_INPUT_SHORT_NAMES = ['krin'] as const;

/** What a Runtime may declare in `spec.capabilities`. */
export const RUNTIME_CAPABILITIES = ['checkpoint-v1'] as const;
export type RuntimeCapability = (typeof RUNTIME_CAPABILITIES)[number];
export const CHECKPOINT_CAPABILITY: RuntimeCapability = 'checkpoint-v1';

/**
 * The artifact ID of an attempt's checkpoint object
 * (`<prefix>/<namespace>/<run UID>/<attempt>/krt.checkpoint`). IDs starting with `krt.`
 * are reserved for the platform: spec.artifacts may not declare one.
 */
export const CHECKPOINT_ARTIFACT_ID = 'krt.checkpoint';
export const RESERVED_ARTIFACT_ID_PREFIX = 'krt.';
export const CHECKPOINT_MEDIA_TYPE = 'application/octet-stream';

/** A caller-chosen response ID: 1-128 characters, letters, digits and `._:-`, starting with a letter or digit. */
export const RESPONSE_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';
const responseIdRegExp = new RegExp(RESPONSE_ID_PATTERN);

export function isResponseId(value: string): boolean {
  return responseIdRegExp.test(value);
}

/** An attempt's checkpoint object as its attempt stored it and runtimed verified it. */
export interface CheckpointRecord {
  /** The attempt that stored it: the object key's attempt segment. */
  attempt: number;
  /** `sha256:<64 hex>` of its bytes. */
  digest: string;
  size: number;
}

/** `status.waitingInput`: set while the Run is WaitingInput. */
export interface WaitingInputStatus {
  /** The JSON Schema (JSON text) a response's data must satisfy. */
  schema: string;
  checkpoint: CheckpointRecord;
  /** When the Run started waiting. */
  since: string;
}

/**
 * `status.resume`: what the current continuation attempt starts from, set when a
 * response was accepted and kept for every attempt of that continuation (a retry of a
 * continuation starts from the same checkpoint and response).
 */
export interface ResumeStatus {
  checkpoint: CheckpointRecord;
  responseId: string;
  /** Name of the RunInput that carried the response. */
  runInput: string;
  /** The response's data as JSON text, validated against the schema the Run waited with. */
  input: string;
  /** The first attempt of this continuation; retries of it count from here. */
  attempt: number;
}

/** One accepted response in `status.responses` (the latest BOUNDS.responsesKept). */
export interface ResponseRecord {
  responseId: string;
  runInput: string;
  /** The continuation attempt the response started. */
  attempt: number;
  time: string;
}

export interface RunInputSpec {
  /** The Run (same namespace) that waits for this response. Immutable. */
  runName: string;
  /** Caller-chosen; a response ID the Run already accepted continues nothing a second time. Immutable. */
  responseId: string;
  /** The response: any JSON value, validated against the Run's `status.waitingInput.schema`. Immutable. */
  data: unknown;
}

export const RUN_INPUT_CONDITION_TYPES = {
  /** True: the response continued the Run (or had already); False: refused for good, with the reason. */
  accepted: 'Accepted',
} as const;

export const RUN_INPUT_REASONS = {
  /** The response started continuation attempt `status.attempt`. */
  accepted: 'Accepted',
  /** The Run had already accepted this response ID: nothing new started (`status.attempt` is the continuation it started). */
  duplicateResponse: 'DuplicateResponse',
  runNotFound: 'RunNotFound',
  /** The Run is not waiting for input (not yet, or it already continued with another response). */
  runNotWaiting: 'RunNotWaiting',
  /** The Run is finished. */
  runFinished: 'RunFinished',
  /** The data does not satisfy the Run's input schema; the message lists the violations. */
  inputInvalid: 'InputInvalid',
  /** The data is larger than BOUNDS.inputDataBytes as JSON. */
  inputTooLarge: 'InputTooLarge',
  /** The Run's cancel was requested: it ends Cancelled instead. */
  runCancelled: 'RunCancelled',
} as const;

export type RunInputReason = (typeof RUN_INPUT_REASONS)[keyof typeof RUN_INPUT_REASONS];

export interface RunInputStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  /** UID of the Run the response was decided against. */
  runUID?: string;
  /** The continuation attempt this response started (Accepted or DuplicateResponse). */
  attempt?: number;
}

export interface RunInput {
  apiVersion: 'kruntimes.io/v1alpha1';
  kind: 'RunInput';
  metadata: ObjectMeta;
  spec: RunInputSpec;
  status?: RunInputStatus;
}
