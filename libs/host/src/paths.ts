import { access } from 'node:fs/promises';

/** Whether a path exists; errors other than ENOENT (permissions, I/O) are thrown, not hidden. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
