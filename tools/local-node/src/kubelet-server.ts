import { once } from 'node:events';
import { open, readFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { cutToLimit, parseCriLine, parseLogQuery, recordWanted, renderRecord, selectRecords } from './container-logs.ts';
import type { LogQuery } from './container-logs.ts';
import { assertLoopback } from './loopback.ts';
import { nowNs } from './log-writer.ts';

/** Who presented a client certificate: the user is its common name, the groups its organizations (as kube-apiserver reads them). */
export interface CertificateUser {
  name: string;
  groups: string[];
}

/** What the server asks the agent for one log request. */
export type LogLookup =
  { kind: 'log'; file: string; closed: Promise<void> } | { kind: 'not-found'; message: string } | { kind: 'unavailable'; message: string };

export interface KubeletServerOptions {
  host: string;
  /** 0: a free port (the Node's status names the one it got). */
  port: number;
  certPem: string;
  keyPem: string;
  /** Client certificates must be signed by this CA: kube-apiserver's kubelet client certificate is. */
  clientCaPem: string;
  /** Authorization of an authenticated user, as the kubelet's webhook authorizer does it (a SubjectAccessReview). */
  authorize: (user: CertificateUser) => Promise<boolean>;
  lookup: (namespace: string, pod: string, container: string, previous: boolean) => LogLookup;
  onError: (error: unknown) => void;
}

const LOGS_PATH = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/;
/** How often a follower looks for more output: a file poll is simple and bounded (fs.watch is not reliable on every file system). */
const FOLLOW_POLL_MS = 100;

/**
 * The kubelet's log endpoint on the node's InternalIP: `GET /containerLogs/{namespace}/{pod}/{container}`
 * over HTTPS, for kube-apiserver only (its client certificate, then authorization), answering
 * as the kubelet does (pkg/kubelet/server/server.go getContainerLogs).
 */
export class KubeletServer {
  readonly #server: Server;
  readonly #options: KubeletServerOptions;
  /** Aborted on close: every follower ends. */
  readonly #closing = new AbortController();

  private constructor(server: Server, options: KubeletServerOptions) {
    this.#server = server;
    this.#options = options;
  }

  static async start(options: KubeletServerOptions): Promise<KubeletServer> {
    assertLoopback(options.host, 'kubelet endpoint');
    const server = createServer({
      cert: options.certPem,
      key: options.keyPem,
      ca: options.clientCaPem,
      requestCert: true,
      // Verified, but the handshake goes on: a missing or foreign certificate gets a 401, as from the kubelet.
      rejectUnauthorized: false,
    });
    const kubelet = new KubeletServer(server, options);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      kubelet.#handle(req, res).catch((error: unknown) => {
        options.onError(error);
        if (!res.headersSent) plain(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    });
    server.listen(options.port, options.host);
    await once(server, 'listening');
    return kubelet;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.#closing.abort();
    const closed = new Promise<void>((resolve) => {
      this.#server.close(() => {
        resolve();
      });
    });
    this.#server.closeAllConnections();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const socket = req.socket as TLSSocket;
    if (!socket.authorized) {
      plain(res, 401, 'Unauthorized');
      return;
    }
    const user = certificateUser(socket);
    const url = new URL(req.url ?? '/', 'https://kubelet');
    if (!(await this.#options.authorize(user))) {
      // The kubelet's message; /containerLogs is a `proxy` subresource of the node for its authorizer.
      plain(res, 403, `Forbidden (user=${user.name}, verb=get, resource=nodes, subresource=proxy)`);
      return;
    }
    const match = LOGS_PATH.exec(url.pathname);
    if (match === null || req.method !== 'GET') {
      plain(res, 404, '404 page not found');
      return;
    }
    const [, namespace = '', pod = '', container = ''] = match.map((part) => decodeURIComponent(part));
    const query = parseLogQuery(url.searchParams, nowNs());
    if ('error' in query) {
      plain(res, query.error.includes('Invalid') ? 422 : 400, query.error);
      return;
    }
    const found = this.#options.lookup(namespace, pod, container, query.previous);
    if (found.kind !== 'log') {
      plain(res, found.kind === 'not-found' ? 404 : 400, found.message);
      return;
    }
    await this.#stream(res, found.file, found.closed, query);
  }

  /** The selected records, then (following) what the start writes until its output ends. */
  async #stream(res: ServerResponse, file: string, closed: Promise<void>, query: LogQuery): Promise<void> {
    // An object: a closure sets it, which the loop's control-flow narrowing would not see of a `let`.
    const output = { ended: false };
    void closed.then(() => {
      output.ended = true;
    });
    const gone = new AbortController();
    res.on('close', () => {
      gone.abort();
    });
    const signal = AbortSignal.any([gone.signal, this.#closing.signal]);
    // No Content-Length: chunked, as the kubelet answers.
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    let remaining = query.limitBytes;
    /** False once limitBytes is reached. */
    const write = async (text: string): Promise<boolean> => {
      // Gone (the client left, the agent stops): neither 'drain' nor another 'abort' would come.
      if (signal.aborted) return false;
      const bytes = cutToLimit(Buffer.from(text), remaining);
      if (remaining !== undefined) remaining -= bytes.length;
      if (bytes.length > 0 && !res.write(bytes)) await Promise.race([once(res, 'drain'), once(signal, 'abort')]);
      return remaining !== 0;
    };
    const initial = await readFile(file).catch(() => Buffer.alloc(0));
    let offset = initial.lastIndexOf(10) + 1;
    for (const record of selectRecords(initial.subarray(0, offset).toString('utf8'), query)) {
      if (!(await write(renderRecord(record, query.timestamps)))) return void res.end();
    }
    while (query.follow && !signal.aborted) {
      // Looked at before reading: once the output has ended, this read is the last one.
      const last = output.ended;
      const more = await readFrom(file, offset);
      const complete = more.lastIndexOf(10) + 1;
      offset += complete;
      for (const line of more.subarray(0, complete).toString('utf8').split('\n').slice(0, -1)) {
        const record = parseCriLine(line);
        if (record !== undefined && recordWanted(record, query) && !(await write(renderRecord(record, query.timestamps))))
          return void res.end();
      }
      if (last) break;
      await Promise.race([sleep(FOLLOW_POLL_MS, undefined, { signal }).catch(() => undefined), closed]);
    }
    res.end();
  }
}

async function readFrom(file: string, offset: number): Promise<Buffer> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const { size } = await handle.stat();
    if (size <= offset) return Buffer.alloc(0);
    const buffer = Buffer.alloc(size - offset);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function certificateUser(socket: TLSSocket): CertificateUser {
  const subject = socket.getPeerCertificate().subject as Record<string, string | string[] | undefined>;
  const list = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
  return { name: list(subject.CN)[0] ?? '', groups: list(subject.O) };
}

function plain(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${message}\n`);
}
