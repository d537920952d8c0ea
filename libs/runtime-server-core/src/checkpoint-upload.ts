import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { KruntimesError } from '@kruntimes/errors';
import type { UploadGrant } from './artifact-grants-client.ts';

/** A checkpoint is at most 1 MiB: an upload that takes longer than this has stalled. */
const UPLOAD_TIMEOUT_MS = 60_000;
/** Of a refusal's body, this much goes into the error message. */
const EXCERPT_BYTES = 300;

/**
 * PUTs the checkpoint to the grant's presigned URL with exactly the grant's headers
 * (node adds only Host and Connection), as the helpers upload artifacts. The store
 * answering 5xx or not at all is ArtifactStoreUnavailable (it may pass); any other
 * refusal is CheckpointNotStored. Neither message carries the URL: it is a credential.
 */
export async function putCheckpoint(grant: UploadGrant, body: Buffer, signal: AbortSignal): Promise<void> {
  let url: URL;
  try {
    url = new URL(grant.url);
  } catch {
    throw new KruntimesError('Internal', 'runtimed granted a checkpoint URL that is not one');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new KruntimesError('Internal', `runtimed granted a checkpoint URL with scheme ${url.protocol}`);
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const request = send(url, { method: grant.method, headers: grant.headers, timeout: UPLOAD_TIMEOUT_MS, signal }, resolve);
    request.on('timeout', () => {
      request.destroy(
        new KruntimesError('ArtifactStoreUnavailable', `the store did not take the checkpoint within ${UPLOAD_TIMEOUT_MS / 1000} s`),
      );
    });
    request.on('error', (error) => {
      reject(
        error instanceof KruntimesError || signal.aborted
          ? error
          : new KruntimesError('ArtifactStoreUnavailable', `cannot upload the checkpoint to ${url.host}: ${error.message}`, {
              cause: error,
            }),
      );
    });
    request.end(body);
  });
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of response) {
      if (bytes < EXCERPT_BYTES) chunks.push(chunk as Buffer);
      bytes += (chunk as Buffer).byteLength;
    }
  } catch (error) {
    if (signal.aborted) throw error;
    throw new KruntimesError(
      'ArtifactStoreUnavailable',
      `the store's answer to the checkpoint upload broke off: ${(error as Error).message}`,
    );
  }
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return;
  const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
  throw new KruntimesError(
    status >= 500 ? 'ArtifactStoreUnavailable' : 'CheckpointNotStored',
    `the store answered the checkpoint upload with ${String(status)}: ${excerpt}`,
  );
}
