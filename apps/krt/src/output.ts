import { stringify } from 'yaml';
import { CONDITION_TYPES, DEFAULTS, runModeKind } from '@kruntimes/api';
import type { ArtifactRecord, Run, Runtime } from '@kruntimes/api';
import { currentPhase, findCondition } from '@kruntimes/run-state';
import type { OutputFormat } from './args.ts';

/** kubectl-style age: 45s, 12m, 3h, 5d. */
export function age(created: string | undefined, nowMs: number): string {
  if (created === undefined) return '<unknown>';
  const seconds = Math.max(0, Math.floor((nowMs - Date.parse(created)) / 1000));
  if (!Number.isFinite(seconds)) return '<unknown>';
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

/** Runs as `krt get` prints them. */
export function formatRuns(runs: readonly Run[], format: OutputFormat, nowMs: number): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(runs.length === 1 ? runs[0] : { apiVersion: 'v1', kind: 'List', items: runs }, null, 2)}\n`;
    case 'yaml':
      return stringify(runs.length === 1 ? runs[0] : { apiVersion: 'v1', kind: 'List', items: runs });
    case 'table':
    case 'wide':
      return table(runs, format === 'wide', nowMs);
  }
}

/**
 * Why a Pending Run waits (on stderr under `krt get RUN`): its reason and the scheduler's
 * message, e.g. `WaitingForCapacity: waiting for a slot: Runtime python has 3 of 8 Pods ready,
 * 12 of 12 slots used; scaling up`. Undefined for any other Run, or one with no message.
 */
export function pendingHint(run: Run): string | undefined {
  const { reason, message } = run.status ?? {};
  if (currentPhase(run) !== 'Pending' || message === undefined || message === '') return undefined;
  return `run/${run.metadata.name ?? ''} is Pending: ${reason === undefined ? '' : `${reason}: `}${message}\n`;
}

/**
 * Runtimes as `krt get` prints them above the Runs: PODS ready/desired (desired is spec.replicas, which the
 * autoscaler sets when SCALING is not `-`), SLOTS used/total (Runs holding a slot / capacity of the ready Pods),
 * PENDING Runs waiting for a slot, and the Scaling condition's reason.
 */
export function formatRuntimes(runtimes: readonly Runtime[], nowMs: number): string {
  return columns([
    ['RUNTIME', 'LANGUAGE', 'PODS', 'SLOTS', 'PENDING', 'SCALING', 'AGE'],
    ...runtimes.map((runtime) => {
      const status = runtime.status;
      return [
        runtime.metadata.name ?? '',
        runtime.spec.language,
        `${String(status?.readyPods ?? 0)}/${String(runtime.spec.replicas ?? DEFAULTS.replicas)}`,
        `${String(status?.usedCapacity ?? 0)}/${String(status?.totalCapacity ?? 0)}`,
        String(status?.pendingRuns ?? 0),
        runtime.spec.scaling === undefined ? '-' : (findCondition(status?.conditions, CONDITION_TYPES.scaling)?.reason ?? '-'),
        age(runtime.metadata.creationTimestamp, nowMs),
      ];
    }),
  ]);
}

/** What to do about a Run waiting for input (on stderr under `krt get RUN`); undefined for any other Run. */
export function waitingHint(run: Run): string | undefined {
  const waiting = run.status?.waitingInput;
  if (currentPhase(run) !== 'WaitingInput' || waiting === undefined) return undefined;
  const name = run.metadata.name ?? '';
  return (
    `run/${name} waits for input since ${waiting.since} (attempt ${String(waiting.checkpoint.attempt)} stored its checkpoint).\n` +
    `  schema:  krt wait ${name} --for input\n` +
    `  respond: krt respond ${name} --id ID --data JSON\n`
  );
}

/** status.artifacts as `krt artifacts RUN` prints them. */
export function formatArtifacts(records: readonly ArtifactRecord[]): string {
  return columns([['ID', 'SIZE', 'MEDIA TYPE', 'DIGEST'], ...records.map((r) => [r.id, String(r.size), r.mediaType, r.digest])]);
}

function columns(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return (
    rows
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column] ?? 0))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

function table(runs: readonly Run[], wide: boolean, nowMs: number): string {
  // REASON is in the default view, like kubectl's: it tells what an active Run is doing (e.g. Cancelling).
  const header = ['NAME', 'PHASE', 'REASON', 'MODE', 'RUNTIME', 'ATTEMPT', 'AGE', ...(wide ? ['POD', 'PARENT', 'SOURCE', 'ENDPOINT'] : [])];
  const rows = runs.map((run) => [
    run.metadata.name ?? '',
    currentPhase(run),
    run.status?.reason ?? '-',
    runModeKind(run.spec),
    run.spec.runtime,
    String(run.status?.attempt ?? '-'),
    age(run.metadata.creationTimestamp, nowMs),
    ...(wide
      ? [
          run.status?.assignedPod ?? '-',
          run.spec.parentRunRef?.name ?? '-',
          run.status?.source === undefined ? '-' : shortDigest(run.status.source.digest),
          run.status?.endpoint?.url ?? '-',
        ]
      : []),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  return (
    [header, ...rows]
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column] ?? 0))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** The short form of a source digest, as `krt get -o wide` prints it: `sha256:` and 12 hex digits. */
export function shortDigest(digest: string): string {
  return digest.startsWith('sha256:') ? digest.slice(0, 'sha256:'.length + 12) : digest;
}
