import type { Readable } from 'node:stream';
import { KruntimesError } from '@kruntimes/errors';

/**
 * Reads a request body of at most `limit` bytes. The bytes are counted as they arrive:
 * the moment the count passes the limit it stops reading (pauses the stream, keeps
 * nothing more) and rejects with PayloadTooLarge, so no more than `limit` bytes are
 * ever held, whatever Content-Length said (or did not say).
 */
export async function readBoundedBody(stream: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = (): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > limit) {
        cleanup();
        stream.pause();
        chunks.length = 0;
        reject(new KruntimesError('PayloadTooLarge', `the request body is over ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, total));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    // The client went away before the end of the body.
    const onClose = (): void => {
      cleanup();
      reject(new Error('the request was closed before its body ended'));
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('close', onClose);
  });
}
