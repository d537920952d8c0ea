import { RecencyBoundedMap } from '@kruntimes/controller-runtime';
import type { RunRef } from './pod-lease.ts';

/** Far more attempts than one Pod works on while their reports are still being written. */
const MAX_TRACKED_ATTEMPTS = 10_000;

/**
 * runtimed's numbering of its status reports, per attempt (Run UID and attempt): each
 * report gets the next number when it is made, and the transition rules and the CRD
 * refuse one whose number is not higher than the recorded one. Numbering goes on from the
 * live Run's number, so a restarted runtimed continues where the last process stopped.
 */
export class ReportNumbers {
  readonly #last = new RecencyBoundedMap<string, number>(MAX_TRACKED_ATTEMPTS);

  next(attempt: RunRef, recorded: number | undefined): number {
    const key = `${attempt.uid}/${String(attempt.attempt)}`;
    const number = Math.max(this.#last.get(key) ?? 0, recorded ?? 0) + 1;
    this.#last.set(key, number);
    return number;
  }
}
