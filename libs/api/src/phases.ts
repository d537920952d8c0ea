/**
 * The Run phase vocabulary. What each phase means to the rest of the system
 * (terminal, active, holds capacity, ...) is decided only in @kruntimes/run-state.
 */
export const RUN_PHASES = [
  'Pending',
  'Scheduled',
  'Running',
  'Ready',
  'WaitingInput',
  'Succeeded',
  'Failed',
  'Timeout',
  'Cancelled',
  'Interrupted',
] as const;

export type RunPhase = (typeof RUN_PHASES)[number];

export function isRunPhase(value: unknown): value is RunPhase {
  return typeof value === 'string' && (RUN_PHASES as readonly string[]).includes(value);
}

export const RUNTIME_LANGUAGES = ['python', 'bash'] as const;
export type RuntimeLanguage = (typeof RUNTIME_LANGUAGES)[number];

export const ENDPOINT_PROTOCOLS = ['HTTP', 'HTTPS'] as const;
export type EndpointProtocol = (typeof ENDPOINT_PROTOCOLS)[number];
