import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename } from 'node:path';

/**
 * Opens a file a Run wrote for the server to read (its outputs): never through a link (a
 * Run would point it at a file only the server may read), never a FIFO or device (opened
 * non-blocking, refused unless regular), and, for a walled Run, only a file of its own uid.
 * Throws an Error that names the file's problem; ENOENT passes through.
 */
export async function openRunFile(path: string, owner: number | undefined): Promise<FileHandle> {
  let file: FileHandle;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new Error(`${basename(path)} is a symbolic link`);
    throw error;
  }
  const info = await file.stat();
  const problem = !info.isFile()
    ? `${basename(path)} is not a regular file`
    : owner !== undefined && info.uid !== owner
      ? `${basename(path)} does not belong to the Run's user`
      : undefined;
  if (problem === undefined) return file;
  await file.close();
  throw new Error(problem);
}
