import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KruntimesError } from '@kruntimes/errors';
import { putCheckpoint } from './checkpoint-upload.ts';

/** A store that answers the status named in the path, after reading the body. */
let store: Server;
let base: string;
beforeAll(async () => {
  store = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const status = Number((request.url ?? '').split('/')[1]);
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end(status === 200 ? '' : `<Error>${String(status)}</Error>`);
    });
  });
  await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${String((store.address() as AddressInfo).port)}`;
});
afterAll(async () => {
  store.closeAllConnections();
  await new Promise((resolve) => store.close(resolve));
});

const grant = (url: string) => ({ url, method: 'PUT', headers: { 'content-length': '3' }, expiresAt: '' });
const codeOf = (promise: Promise<void>): Promise<string> =>
  promise.then(
    () => 'stored',
    (error: unknown) => (error instanceof KruntimesError ? `${error.code}: ${error.message}` : String(error)),
  );

describe('putCheckpoint', () => {
  it('stores on 2xx; a 4xx is CheckpointNotStored, a 5xx or no store ArtifactStoreUnavailable, never naming the URL', async () => {
    const signal = new AbortController().signal;
    const body = Buffer.from('abc');
    expect(await codeOf(putCheckpoint(grant(`${base}/200/k?X-Amz-Signature=secret`), body, signal))).toBe('stored');
    const forbidden = await codeOf(putCheckpoint(grant(`${base}/403/k?X-Amz-Signature=secret`), body, signal));
    expect(forbidden).toMatch(/^CheckpointNotStored: the store answered the checkpoint upload with 403: <Error>403/);
    expect(await codeOf(putCheckpoint(grant(`${base}/503/k?X-Amz-Signature=secret`), body, signal))).toMatch(/^ArtifactStoreUnavailable: /);
    const closed = await codeOf(putCheckpoint(grant('http://127.0.0.1:9/k?X-Amz-Signature=secret'), body, signal));
    expect(closed).toMatch(/^ArtifactStoreUnavailable: cannot upload the checkpoint to 127\.0\.0\.1:9/);
    expect([forbidden, closed].join()).not.toContain('secret');
    expect(await codeOf(putCheckpoint(grant('file:///etc/passwd'), body, signal))).toMatch(/^Internal: /);
  });
});
