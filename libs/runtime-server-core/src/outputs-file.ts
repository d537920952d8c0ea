import { BOUNDS, validateOutputs } from '@kruntimes/api';
import { openRunFile } from './run-files.ts';

/** The outputs file is read only up to this size: the most that valid outputs can take. */
const OUTPUTS_FILE_BYTES = BOUNDS.outputCount * (BOUNDS.outputKeyBytes + BOUNDS.outputValueBytes * 6 + 16) + 1024;

/**
 * Reads $KRT_OUTPUTS_FILE: absent is no outputs; anything invalid is reported, not thrown.
 * `owner`: a walled Run's uid, the only owner its outputs file may have.
 */
export async function readOutputs(path: string, owner?: number): Promise<{ outputs: Record<string, string>; error: string }> {
  let text: string;
  try {
    const file = await openRunFile(path, owner);
    try {
      const { size } = await file.stat();
      if (size > OUTPUTS_FILE_BYTES) return { outputs: {}, error: `outputs file is ${size} bytes, larger than any valid outputs` };
      text = await file.readFile('utf8');
    } finally {
      await file.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { outputs: {}, error: '' };
    throw error;
  }
  return parseOutputs(text);
}

export function parseOutputs(text: string): { outputs: Record<string, string>; error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { outputs: {}, error: 'outputs file is not JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { outputs: {}, error: 'outputs file must hold a JSON object of strings' };
  }
  const outputs = parsed as Record<string, unknown>;
  if (Object.values(outputs).some((value) => typeof value !== 'string')) {
    return { outputs: {}, error: 'outputs values must be strings' };
  }
  const valid = outputs as Record<string, string>;
  const violations = validateOutputs(valid);
  if (violations.length > 0) return { outputs: {}, error: violations.map((v) => `${v.field}: ${v.message}`).join('; ') };
  return { outputs: valid, error: '' };
}
