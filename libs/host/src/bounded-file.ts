import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

/**
 * Writes at most `limit` + 1 bytes of `body` to a new file `path` (mode 0600, never an
 * existing one), hashing what it wrote, and stops reading past the limit: a size over
 * `limit` tells the caller the body was too large without reading all of it. The body
 * is left as it is: an HTTP server still answers the request, a client destroys it.
 */
export async function writeBoundedFile(
  body: AsyncIterable<unknown>,
  path: string,
  limit: number,
): Promise<{ size: number; sha256Hex: string }> {
  const hash = createHash('sha256');
  const file = await open(path, 'wx', 0o600);
  let size = 0;
  try {
    for await (const chunk of body) {
      const bytes = chunk as Buffer;
      size += bytes.length;
      if (size > limit) break;
      hash.update(bytes);
      await file.write(bytes);
    }
  } finally {
    await file.close();
  }
  return { size, sha256Hex: hash.digest('hex') };
}
