import type { IncomingMessage, ServerResponse } from 'node:http';

/** What a bare relay sends on: the request's path (without `/`), invocation ID and body. */
export interface RelayedRequest {
  target: string;
  invocationId: string;
  payload: Buffer;
}

/**
 * The HTTPS side of the bench's bare hops (the in-process floor and the relay process): read
 * the body, make one call, answer its result as the gateway's JSON (200) or the error (500).
 * Nothing else: no checks, logs or metrics.
 */
export function relayHandler(call: (request: RelayedRequest) => Promise<{ result: Uint8Array }>) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      call({
        target: request.url?.slice(1) ?? '',
        invocationId: String(request.headers['x-kruntime-invocation-id']),
        payload: Buffer.concat(chunks),
      }).then(
        (answer) => {
          const result = Buffer.from(answer.result.buffer, answer.result.byteOffset, answer.result.byteLength);
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ result: result.length === 0 ? null : (JSON.parse(result.toString('utf8')) as unknown) }));
        },
        (error: unknown) => {
          response.writeHead(500);
          response.end(String(error));
        },
      );
    });
  };
}
