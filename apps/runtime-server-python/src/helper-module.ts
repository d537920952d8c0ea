import { delimiter, join } from 'node:path';

/** Holds `krt`, the helper module for user code (`krt.idempotency_key`, `krt.run_uid`, `krt.attempt`), and `kruntimes_sandbox`, the sandbox handler. */
export const HELPER_DIR = join(import.meta.dirname, 'pylib');

/** PYTHONPATH of user code (tasks and function workers): the helper module first, then whatever the Run set. */
export function userPythonPath(env: Readonly<Record<string, string>>): string {
  const own = env.PYTHONPATH ?? '';
  return own === '' ? HELPER_DIR : `${HELPER_DIR}${delimiter}${own}`;
}
