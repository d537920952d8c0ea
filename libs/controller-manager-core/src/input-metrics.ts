const DECIDED = 'kruntimes_run_input_decisions_total';
const WAIT_ENDED = 'kruntimes_waiting_input_ended_total';

/**
 * The RunInput controller's metrics in the Prometheus text format (0.0.4), counted by the
 * replica that did the write (a sum over replicas is the truth):
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `kruntimes_run_input_decisions_total` | counter | `namespace`, `reason` (Accepted, DuplicateResponse, or the refusal's reason) |
 * | `kruntimes_waiting_input_ended_total` | counter | `namespace`, `phase` (Timeout or Cancelled: ended while waiting) |
 *
 * How many Runs wait right now is `kruntimes_runs{phase="WaitingInput"}`.
 */
export class InputMetrics {
  readonly #decided = new Map<string, number>();
  readonly #ended = new Map<string, number>();

  decided(namespace: string, reason: string): void {
    const key = labels({ namespace, reason });
    this.#decided.set(key, (this.#decided.get(key) ?? 0) + 1);
  }

  waitEnded(namespace: string, phase: string): void {
    const key = labels({ namespace, phase });
    this.#ended.set(key, (this.#ended.get(key) ?? 0) + 1);
  }

  render(): string {
    const lines = [
      `# HELP ${DECIDED} RunInputs decided: accepted (a continuation started), duplicate, or refused with the reason.`,
      `# TYPE ${DECIDED} counter`,
      ...[...this.#decided.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, value]) => `${DECIDED}{${key}} ${String(value)}`),
      `# HELP ${WAIT_ENDED} Runs that ended while waiting for input, by final phase (spec.timeout passed, or cancel).`,
      `# TYPE ${WAIT_ENDED} counter`,
      ...[...this.#ended.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, value]) => `${WAIT_ENDED}{${key}} ${String(value)}`),
    ];
    return `${lines.join('\n')}\n`;
  }
}

function labels(values: Record<string, string>): string {
  // Namespaces, reasons and phases are names: nothing to escape.
  return Object.entries(values)
    .map(([name, value]) => `${name}="${value}"`)
    .join(',');
}
