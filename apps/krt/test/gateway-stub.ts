// A local HTTPS server answering like the runtime-gateway, for `krt invoke` tests that do
// not need the whole system (self-signed certificate for 127.0.0.1 from the openssl CLI).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface StubRequest {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type StubAnswer = (request: StubRequest, response: ServerResponse) => void;

export class GatewayStub {
  readonly requests: StubRequest[] = [];
  /** base64 PEM, as in a Run's status.endpoint.caBundle. */
  readonly caBundle: string;
  answer: StubAnswer = () => undefined;
  readonly #server: Server;
  #port = 0;

  private constructor(certPem: string, keyPem: string) {
    this.caBundle = Buffer.from(certPem).toString('base64');
    this.#server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request = { url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(request);
        this.answer(request, res);
      });
    });
  }

  static async start(): Promise<GatewayStub> {
    const dir = await mkdtemp(join(tmpdir(), 'krt-gw-'));
    let pems: [string, string];
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
        '/CN=krt-test-gateway',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ]);
      pems = await Promise.all([readFile(cert, 'utf8'), readFile(key, 'utf8')]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const stub = new GatewayStub(...pems);
    await new Promise<void>((resolve) => stub.#server.listen(0, '127.0.0.1', resolve));
    const address = stub.#server.address();
    stub.#port = typeof address === 'object' && address !== null ? address.port : 0;
    return stub;
  }

  url(namespace: string, uid: string): string {
    return `https://127.0.0.1:${this.#port}/v1/namespaces/${namespace}/runtimes/py/functions/${uid}:invoke`;
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

export function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}
