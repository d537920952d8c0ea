import type { IncomingMessage, ServerResponse } from 'node:http';
import { KruntimesError } from '@kruntimes/errors';

/** The body as JSON, at most `limit` bytes. */
export async function readJson(request: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit) throw new KruntimesError('PayloadTooLarge', `the body is over ${limit} bytes`);
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of request) {
    bytes += (chunk as Buffer).byteLength;
    if (bytes > limit) throw new KruntimesError('PayloadTooLarge', `the body is over ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new KruntimesError('InvalidRequest', 'the body is not JSON');
  }
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(text);
}
