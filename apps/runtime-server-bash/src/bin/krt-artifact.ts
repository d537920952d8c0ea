// krt-artifact: the Bash side of krt.artifacts, for task code on the bash Runtime Server's
// PATH (through a wrapper that runs it with the server's own node). Node built-ins only.
//   krt-artifact put ID FILE [MEDIA_TYPE]             hash, grant, upload, record; prints the manifest entry
//   krt-artifact grant ID SIZE SHA256 [MEDIA_TYPE]    prints the grant {url, method, headers, expiresAt}
//   krt-artifact record ID SIZE SHA256 [MEDIA_TYPE]   records the entry in the ResultManifest
// Exit 0: done; 1: refused (the code and message on stderr); 2: usage.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Refused, Usage, postEndpoint, reportFailure } from './local-endpoint.ts';

const USAGE = `usage: krt-artifact put ID FILE [MEDIA_TYPE]
       krt-artifact grant ID SIZE SHA256 [MEDIA_TYPE]
       krt-artifact record ID SIZE SHA256 [MEDIA_TYPE]`;
const ENDPOINT_TIMEOUT_MS = 30_000;
const UPLOAD_TIMEOUT_MS = 10 * 60_000;
const EXCERPT_BYTES = 500;

interface Grant {
  url: string;
  method: string;
  headers: Record<string, string>;
  expiresAt: string;
}

function claim(id: string, size: number, sha256: string, mediaType: string | undefined): Record<string, unknown> {
  return { artifactId: id, size, sha256, ...(mediaType === undefined ? {} : { mediaType }) };
}

function endpoint(path: string, body: Record<string, unknown>): Promise<unknown> {
  return postEndpoint(
    path,
    body,
    ENDPOINT_TIMEOUT_MS,
    new Refused('ArtifactNotDeclared', 'KRT_ARTIFACTS_URL is not set: this Run declares no artifacts'),
  );
}

async function digest(file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).byteLength;
  }
  return { size, sha256: hash.digest('hex') };
}

/** PUTs the file with exactly the grant's headers (node adds only Host and Connection). */
async function upload(grant: Grant, file: string, size: number): Promise<void> {
  const url = new URL(grant.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Refused('InvalidRequest', `the grant's URL is ${url.protocol}`);
  const options: RequestOptions = { method: grant.method, headers: grant.headers, timeout: UPLOAD_TIMEOUT_MS };
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const request: ClientRequest = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, resolve);
    request.on('timeout', () => request.destroy(new Refused('StoreUnreachable', 'the upload timed out')));
    request.on('error', (error) => {
      reject(error instanceof Refused ? error : new Refused('StoreUnreachable', `the upload to ${url.host} failed: ${error.message}`));
    });
    if (size === 0) {
      request.end();
      return;
    }
    // Exactly the hashed bytes, as Content-Length promises.
    const body = createReadStream(file, { start: 0, end: size - 1 });
    body.on('error', (error) => request.destroy(error));
    body.pipe(request);
  });
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of response) {
    if (bytes < EXCERPT_BYTES) chunks.push(chunk as Buffer);
    bytes += (chunk as Buffer).byteLength;
  }
  const status = response.statusCode ?? 0;
  if (status >= 300) {
    const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
    throw new Refused('StoreRejected', `the store answered ${String(status)}: ${excerpt}`);
  }
}

function sizeArg(text: string | undefined): number {
  if (text === undefined || !/^\d{1,16}$/.test(text)) throw new Usage(`SIZE must be a number of bytes, not ${String(text)}`);
  return Number(text);
}

async function main(argv: readonly string[]): Promise<unknown> {
  const [command, id, third, fourth, fifth, ...rest] = argv;
  if (id === undefined || third === undefined || rest.length > 0) throw new Usage(USAGE);
  switch (command) {
    case 'put': {
      if (fifth !== undefined) throw new Usage(USAGE);
      const { size, sha256 } = await digest(third);
      const grant = (await endpoint('/v1/grants', claim(id, size, sha256, fourth))) as Grant;
      await upload(grant, third, size);
      return endpoint('/v1/manifest', claim(id, size, sha256, fourth));
    }
    case 'grant':
    case 'record':
      if (fourth === undefined) throw new Usage(USAGE);
      return endpoint(command === 'grant' ? '/v1/grants' : '/v1/manifest', claim(id, sizeArg(third), fourth, fifth));
    case undefined:
    default:
      throw new Usage(USAGE);
  }
}

try {
  process.stdout.write(`${JSON.stringify(await main(process.argv.slice(2)))}\n`);
} catch (error) {
  reportFailure('krt-artifact', error);
}
