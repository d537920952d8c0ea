import type { ArtifactRecord } from './artifacts.ts';

/** The terminal phases a local run can end in and a synced Run can record. */
export const LOCAL_RESULT_PHASES = ['Succeeded', 'Failed', 'Timeout'] as const;
export type LocalResultPhase = (typeof LOCAL_RESULT_PHASES)[number];

/** A local run id (`krt run --local`): UTC date and time, then random hex, e.g. `20261204-153000-a1b2c3`. */
export const LOCAL_RUN_ID_PATTERN = '^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$';
const localRunIdRegExp = new RegExp(LOCAL_RUN_ID_PATTERN);

export function isLocalRunId(value: string): boolean {
  return localRunIdRegExp.test(value);
}

/** What a local run ended with, as `krt sync` records it (the RunStatus fields of a terminal task). */
export interface LocalRunResult {
  phase: LocalResultPhase;
  reason: string;
  message: string;
  exitCode?: number;
  outputs?: Record<string, string>;
  /** Only when the artifacts were uploaded to the Run's store by `krt sync` (today: never; see docs/local-mode.md). */
  artifacts?: ArtifactRecord[];
  startTime: string;
  completionTime: string;
}

/** `spec.origin.local`: the Run was executed by `krt run --local` and only its result is recorded here. */
export interface LocalOrigin {
  runId: string;
  /** `sha256:<64 hex>` of the lock the local run was pinned by. */
  lockDigest: string;
  result: LocalRunResult;
}

/**
 * `spec.origin`: where a Run was executed when not by the platform. A Run with an origin
 * is never scheduled; the controller-manager moves it from Pending to the recorded
 * terminal phase. Immutable.
 */
export interface RunOrigin {
  local: LocalOrigin;
}

/**
 * Label `krt sync` sets on the Runs it creates (value: the origin kind, `local`): the
 * controller-manager watches only these. spec.origin, not the label, is what counts.
 */
export const ORIGIN_LABEL = 'kruntimes.io/origin';
