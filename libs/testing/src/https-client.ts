import { request } from 'node:https';
import type { Agent } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
  /** SHA-256 fingerprint of the server certificate of the connection that answered. */
  fingerprint: string;
}

export interface CallOptions {
  ca: string;
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Write the body in pieces without Content-Length (chunked). */
  chunked?: boolean;
  agent?: Agent;
}

/**
 * The server certificate of each connection, taken at its handshake: Node no longer
 * reports the peer certificate on a keep-alive socket once it is reused.
 */
const fingerprints = new WeakMap<TLSSocket, string>();

function remember(socket: TLSSocket): void {
  if (fingerprints.has(socket)) return;
  const take = (): void => {
    fingerprints.set(socket, socket.getPeerX509Certificate()?.fingerprint256 ?? '');
  };
  if (socket.getPeerX509Certificate() !== undefined) take();
  else socket.once('secureConnect', take);
}

/** One HTTPS request; resolves with the answer even when the server cut the upload short. */
export async function call(url: string, options: CallOptions): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers: Record<string, string> = { ...options.headers };
    if (body !== undefined && options.chunked !== true) headers['content-length'] = String(body.length);
    const req = request(
      url,
      {
        method: options.method ?? 'POST',
        ca: options.ca,
        headers,
        ...(options.agent === undefined ? { agent: false } : { agent: options.agent }),
      },
      (res) => {
        const fingerprint = fingerprints.get(res.socket as TLSSocket) ?? '';
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json, fingerprint });
        });
        res.on('error', reject);
      },
    );
    req.on('socket', (socket) => {
      remember(socket as TLSSocket);
    });
    // An upload the server stopped reading may fail with EPIPE after the answer came.
    req.on('error', reject);
    if (body === undefined) {
      req.end();
    } else if (options.chunked === true) {
      for (let offset = 0; offset < body.length; offset += 64 * 1024) req.write(body.subarray(offset, offset + 64 * 1024));
      req.end();
    } else {
      req.end(body);
    }
  });
}
