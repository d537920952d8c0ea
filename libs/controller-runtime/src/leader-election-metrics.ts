import { SecondsHistogram, histogramLines, sampleLines } from './prometheus-text.ts';

/**
 * What a leader elector measures of its renewals, rendered beside each service's own
 * metrics. `renew`: one renewal round, from its start to the API server's answer (the
 * Lease read and write). `lateness`: how long after it was due a round started; a
 * blocked event loop (a long synchronous pass) shows up here, not in `renew`.
 */
export class LeaderElectionMetrics {
  readonly renew = new SecondsHistogram();
  readonly lateness = new SecondsHistogram();
  /** Renewal rounds that did not renew (API error, conflict, or cut at the renew deadline). */
  renewFailures = 0;
  leading = false;

  render(): string {
    const lines = [
      ...sampleLines(
        'kruntimes_leader_is_leader',
        'Whether this replica holds its leader Lease (1) or not (0).',
        'gauge',
        this.leading ? 1 : 0,
      ),
      ...histogramLines(
        'kruntimes_leader_renew_seconds',
        "Duration of a leader's Lease renewal round, from its start to the API server's answer.",
        this.renew,
      ),
      ...histogramLines(
        'kruntimes_leader_renew_lateness_seconds',
        'How long after it was due a Lease renewal round started (event-loop delay).',
        this.lateness,
      ),
      ...sampleLines('kruntimes_leader_renew_failures_total', 'Lease renewal rounds that did not renew.', 'counter', this.renewFailures),
    ];
    return `${lines.join('\n')}\n`;
  }
}
