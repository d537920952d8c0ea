// The Runtime Server's local endpoint ($KRT_ARTIFACTS_URL, $KRT_ARTIFACTS_TOKEN) for the
// krt-* commands of task code. Node built-ins only.

/** A refusal: a kruntimes error code and its message. */
export class Refused extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const EXCERPT_BYTES = 500;

/**
 * POSTs JSON to the endpoint and returns its JSON answer; refusals (the endpoint's
 * `{code, message}`) throw Refused. `unset`: what to throw when the execution has no endpoint.
 */
export async function postEndpoint(path: string, body: unknown, timeoutMs: number, unset: Refused): Promise<unknown> {
  const base = process.env.KRT_ARTIFACTS_URL ?? '';
  const token = process.env.KRT_ARTIFACTS_TOKEN ?? '';
  if (base === '' || token === '') throw unset;
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new Refused('Internal', `cannot reach the artifacts endpoint: ${(error as Error).message}`);
  }
  const text = await response.text();
  if (response.ok) return JSON.parse(text) as unknown;
  let parsed: { code?: unknown; message?: unknown } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // Not the endpoint's JSON error: report the status and the text.
  }
  throw new Refused(
    typeof parsed.code === 'string' ? parsed.code : 'Internal',
    typeof parsed.message === 'string' ? parsed.message : `HTTP ${String(response.status)}: ${text.slice(0, EXCERPT_BYTES)}`,
  );
}

/** Misuse of a command: its usage text goes to stderr and it exits 2. */
export class Usage extends Error {}

/**
 * How both commands end on an error: misuse exits 2 with the usage; anything else (a
 * refusal with its stable code, an I/O error) exits 1 with `command: Code: message`.
 */
export function reportFailure(command: string, error: unknown): void {
  if (error instanceof Usage) {
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 2;
    return;
  }
  const code = error instanceof Refused ? error.code : ((error as NodeJS.ErrnoException).code ?? 'Internal');
  process.stderr.write(`${command}: ${code}: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
