// A local HTTPS server that answers like the runtime-gateway, for the tests of its clients
// (the SDK, `krt invoke`) that do not need the whole system.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

/** A self-signed ECDSA P-256 certificate for 127.0.0.1 and localhost (openssl CLI). */
export async function selfSignedCertificate(commonName = 'kruntimes-test-gateway'): Promise<KeyPair> {
  const dir = await mkdtemp(join(tmpdir(), 'krt-cert-'));
  try {
    const [cert, key] = [join(dir, 'tls.crt'), join(dir, 'tls.key')];
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ]);
    return { certPem: await readFile(cert, 'utf8'), keyPem: await readFile(key, 'utf8') };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type StubHandler = (request: RecordedRequest, response: ServerResponse) => void;

export class HttpsStub {
  readonly requests: RecordedRequest[];
  readonly caBundle: string;
  readonly #server: Server;
  readonly #port: number;

  private constructor(server: Server, port: number, certPem: string, requests: RecordedRequest[]) {
    this.requests = requests;
    this.#server = server;
    this.#port = port;
    this.caBundle = Buffer.from(certPem).toString('base64');
  }

  static async start(keyPair: KeyPair, handler: { current: StubHandler }): Promise<HttpsStub> {
    const requests: RecordedRequest[] = [];
    const server = createServer({ cert: keyPair.certPem, key: keyPair.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const recorded = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        requests.push(recorded);
        handler.current(recorded, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    return new HttpsStub(server, typeof address === 'object' && address !== null ? address.port : 0, keyPair.certPem, requests);
  }

  url(path = '/v1/namespaces/ns/runtimes/py/functions/uid-1:invoke'): string {
    return `https://127.0.0.1:${this.#port}${path}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => {
      this.#server.close(() => {
        resolve();
      });
    });
  }
}

/** Answers with `status` and a JSON body, echoing the invocation ID header. */
export function json(response: ServerResponse, request: RecordedRequest, status: number, body: unknown): void {
  const id = request.headers['x-kruntime-invocation-id'];
  response.writeHead(status, { 'content-type': 'application/json', ...(typeof id === 'string' ? { 'x-kruntime-invocation-id': id } : {}) });
  response.end(JSON.stringify(body));
}
