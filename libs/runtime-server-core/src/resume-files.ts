import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BOUNDS, isResponseId, utf8ByteLength } from '@kruntimes/api';

/** ExecuteRequest.resume: what a continuation attempt starts from. */
export interface ResumeInput {
  /** The checkpoint's bytes, as the waiting attempt stored them. */
  readonly checkpoint: Uint8Array;
  /** The attempt that stored the checkpoint. */
  readonly checkpointAttempt: number;
  /** The response's data as JSON text. */
  readonly inputJson: string;
  readonly responseId: string;
}

/**
 * The variables a continuation gets; on any other attempt none of them is set, even when
 * the Run's own env names one (user code tells a continuation by their presence).
 */
export const RESUME_ENV_NAMES = ['KRT_CHECKPOINT_FILE', 'KRT_INPUT_FILE', 'KRT_RESPONSE_ID', 'KRT_RESUMED_FROM_ATTEMPT'] as const;

/** Problems of runtimed's resume for attempt `attempt` (empty: fine). */
export function resumeProblems(resume: ResumeInput, attempt: number): string[] {
  const problems: string[] = [];
  if (resume.checkpoint.byteLength > BOUNDS.checkpointBytes) problems.push(`resume.checkpoint is over ${BOUNDS.checkpointBytes} bytes`);
  if (!Number.isInteger(resume.checkpointAttempt) || resume.checkpointAttempt < 1 || resume.checkpointAttempt >= attempt) {
    problems.push('resume.checkpoint_attempt must be an earlier attempt');
  }
  if (!isResponseId(resume.responseId)) problems.push('resume.response_id is not a response ID');
  if (utf8ByteLength(resume.inputJson) > BOUNDS.inputDataBytes) problems.push(`resume.input_json is over ${BOUNDS.inputDataBytes} bytes`);
  else if (!isJson(resume.inputJson)) problems.push('resume.input_json is not JSON');
  return problems;
}

/**
 * Writes the checkpoint and the response into the execution's read-only directory (not
 * the workdir, which user code may wipe) and returns the variables that name them.
 */
export async function writeResumeFiles(
  dir: string,
  resume: ResumeInput,
  share: (path: string) => Promise<void>,
): Promise<Record<(typeof RESUME_ENV_NAMES)[number], string>> {
  const checkpointFile = join(dir, 'checkpoint');
  const inputFile = join(dir, 'input.json');
  await writeFile(checkpointFile, resume.checkpoint, { mode: 0o600, flag: 'wx' });
  await writeFile(inputFile, resume.inputJson, { mode: 0o600, flag: 'wx' });
  // Readable by the Run, not writable: what it resumes from is what runtimed stored.
  await Promise.all([share(checkpointFile), share(inputFile)]);
  return {
    KRT_CHECKPOINT_FILE: checkpointFile,
    KRT_INPUT_FILE: inputFile,
    KRT_RESPONSE_ID: resume.responseId,
    KRT_RESUMED_FROM_ATTEMPT: String(resume.checkpointAttempt),
  };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
