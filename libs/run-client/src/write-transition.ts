import type { Run, RunStatus } from '@kruntimes/api';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, TransitionRefusedError, WriterRole } from '@kruntimes/run-state';
import { fencedWrite } from './fenced-write.ts';
import type { FencedResult } from './fenced-write.ts';
import type { ObjectClient, ReadonlyDeep } from './object-client.ts';

/** The two calls a transition write makes (an ObjectClient<Run>). */
export type RunStatusWriter = Pick<ObjectClient<Run>, 'get' | 'replaceStatus'>;

export interface TransitionWrite<E = never> {
  writer: WriterRole;
  /** The RFC 3339 time the status records, asked for on each version decided on. */
  now(): string;
  /** The report number (runtimed's), asked for on each version decided on. */
  sequence?(run: Run): number;
  /** The caller's own fence, checked before the state machine on each version (runtimed's epoch): a refusal or undefined. */
  check?(run: Run): E | undefined;
  /** Called just before each write is sent, with the status it carries (the scheduler assumes its bind here). */
  beforeWrite?(run: Run, status: RunStatus): void;
  /** See fencedWrite: fresh reads after a Conflict or a refusal by a possibly stale version. Default 0. */
  retries?: number;
  onConflict?(): void;
}

/** Which Run: its key (read live first), or a version believed current (written first, fenced on its resourceVersion). */
export type RunTarget = { namespace: string; name: string; assumed?: ReadonlyDeep<Run> | undefined } | ReadonlyDeep<Run>;

/**
 * Applies one state-machine event to a Run as `writer`: the pure `transition` on a
 * version, then a status replace fenced on that version's resourceVersion; Conflict is
 * handled as fencedWrite documents. Refused carries the caller's check's error or the
 * state machine's TransitionRefusedError.
 */
export async function writeTransition<E = never>(
  runs: RunStatusWriter,
  target: RunTarget,
  event: RunEvent,
  options: TransitionWrite<E>,
): Promise<FencedResult<Run, E | TransitionRefusedError>> {
  const { namespace, name, assumed } = targetOf(target);
  return fencedWrite<Run, E | TransitionRefusedError>({
    read: () => runs.get(namespace, name),
    assumed,
    retries: options.retries ?? 0,
    onConflict: () => {
      options.onConflict?.();
    },
    decide: (run) => {
      const problem = options.check?.(run);
      if (problem !== undefined) return { refuse: problem };
      const sequence = options.sequence?.(run);
      const result = transition({
        run,
        event,
        writer: options.writer,
        now: options.now(),
        ...(sequence === undefined ? {} : { sequence }),
      });
      if (!result.ok) return { refuse: result.error };
      return {
        write: () => {
          options.beforeWrite?.(run, result.status);
          return runs.replaceStatus(run, result.status);
        },
      };
    },
  });
}

function targetOf(target: RunTarget): { namespace: string; name: string; assumed: ReadonlyDeep<Run> | undefined } {
  if ('metadata' in target) return { namespace: target.metadata.namespace ?? '', name: target.metadata.name ?? '', assumed: target };
  return { namespace: target.namespace, name: target.name, assumed: target.assumed };
}
