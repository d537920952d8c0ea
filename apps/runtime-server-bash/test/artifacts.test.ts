import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { executeToEnd, executionRequest, startArtifactGrantsStub, startServerProcess } from '@kruntimes/testing';
import type { ArtifactGrantsStub, ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const DATA = randomBytes(200_000);
const SHA = createHash('sha256').update(DATA).digest('hex');
const EMPTY_SHA = createHash('sha256').digest('hex');
const DECLARED = [
  { artifactId: 'data.bin', maxBytes: 1_000_000, mediaType: 'application/octet-stream', optional: false },
  { artifactId: 'notes.txt', maxBytes: 100, mediaType: 'text/plain', optional: true },
];

const PUT = `
set -e
krt-artifact put data.bin data.bin
krt-artifact grant notes.txt 5 ${'b'.repeat(64)} text/plain
krt-artifact record notes.txt 5 ${'b'.repeat(64)}
: > empty.txt
krt-artifact put notes.txt empty.txt
`;

const REFUSED = `
krt-artifact put data.bin data.bin; echo "put: $?"
krt-artifact put notes.txt data.bin; echo "too large: $?"
krt-artifact grant other 1 ${'a'.repeat(64)}; echo "undeclared: $?"
krt-artifact frobnicate; echo "usage: $?"
krt-artifact grant data.bin lots ${'a'.repeat(64)}; echo "bad size: $?"
`;

const ENV = `
env > env.txt
echo "$KRT_ARTIFACTS_URL $KRT_ARTIFACTS_TOKEN"
`;

describe('runtime-server-bash: artifacts', () => {
  let server: ServerProcess;
  let grants: ArtifactGrantsStub;
  let workdir: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-sh-art-'));
    writeFileSync(join(workdir, 'data.bin'), DATA);
    writeFileSync(join(workdir, 'put.sh'), PUT);
    writeFileSync(join(workdir, 'refused.sh'), REFUSED);
    writeFileSync(join(workdir, 'env.sh'), ENV);
    grants = await startArtifactGrantsStub();
    server = await startServerProcess(MAIN);
  });

  afterAll(async () => {
    await server.stop();
    await grants.close();
    rmSync(workdir, { recursive: true, force: true });
  });

  const run = async (entrypoint: string, grantToken: string = randomUUID()) => {
    const request = executionRequest({ workdir, entrypoint, grants: { address: grants.address, token: grantToken, declared: DECLARED } });
    const { stdout, stderr, exited } = await executeToEnd(server.client, request);
    return { runUid: request.runUid, stdout, stderr, exited, grantToken };
  };

  it('krt-artifact put uploads the exact bytes with the grant headers; grant and record are the low-level steps; an empty file; the manifest arrives', async () => {
    const before = grants.puts.length;
    const { runUid, stdout, stderr, exited } = await run('put.sh');
    expect(stderr).toEqual([]);
    expect(exited?.exitCode).toBe(0);
    const [put, grant, record, empty] = stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(put).toEqual({ artifactId: 'data.bin', size: DATA.byteLength, sha256: SHA, mediaType: 'application/octet-stream' });
    expect(grant).toMatchObject({ method: 'PUT', headers: { 'content-length': '5', 'content-type': 'text/plain' } });
    expect(record).toMatchObject({ artifactId: 'notes.txt', mediaType: 'text/plain' });
    expect(empty).toEqual({ artifactId: 'notes.txt', size: 0, sha256: EMPTY_SHA, mediaType: 'text/plain' });
    const puts = grants.puts.slice(before);
    expect(puts).toHaveLength(2);
    expect(puts[1]).toMatchObject({ size: 0, sha256: EMPTY_SHA, headers: { 'content-length': '0' } });
    expect(puts[0]).toMatchObject({ method: 'PUT', path: '/bucket/data.bin?X-Amz-Expires=60', size: DATA.byteLength, sha256: SHA });
    expect(puts[0]?.headers).toMatchObject({
      'content-length': String(DATA.byteLength),
      'content-type': 'application/octet-stream',
      'x-amz-checksum-sha256': Buffer.from(SHA, 'hex').toString('base64'),
    });
    // The signed headers, plus only what HTTP itself needs.
    expect(Object.keys(puts[0]?.headers ?? {}).sort()).toEqual([
      'connection',
      'content-length',
      'content-type',
      'host',
      'x-amz-checksum-sha256',
    ]);
    const manifest = [
      { artifactId: 'data.bin', sha256: SHA, size: DATA.byteLength, mediaType: 'application/octet-stream' },
      // Recorded twice: the last record wins.
      { artifactId: 'notes.txt', sha256: EMPTY_SHA, size: 0, mediaType: 'text/plain' },
    ];
    expect(exited?.manifest).toEqual(manifest);
    expect((await server.client.getExecution({ runUid, attempt: 1 })).exited?.manifest).toEqual(manifest);
  });

  it('exits 1 with the code on stderr when refused (a stale attempt at runtimed, too large, undeclared) and 2 on misuse', async () => {
    const token = randomUUID();
    grants.staleTokens.add(token);
    const { stdout, stderr, exited } = await run('refused.sh', token);
    expect(stdout).toEqual(['put: 1', 'too large: 1', 'undeclared: 1', 'usage: 2', 'bad size: 2']);
    expect(stderr[0]).toMatch(/^krt-artifact: StaleAttempt: attempt 1 of the Run is no longer current$/);
    expect(stderr[1]).toMatch(/^krt-artifact: ArtifactTooLarge: /);
    expect(stderr[2]).toMatch(/^krt-artifact: ArtifactNotDeclared: /);
    expect(exited?.manifest).toEqual([]);
  });

  it('puts the endpoint in the environment but not the grant token, and refuses the token once the execution ended', async () => {
    const { stdout, grantToken } = await run('env.sh');
    const [url, token] = (stdout[0] ?? '').split(' ') as [string, string];
    expect(url).toMatch(/^http:\/\/127\.0\.0\.\d+:\d+$/);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const env = readFileSync(join(workdir, 'env.txt'), 'utf8');
    expect(env).toMatch(/^PATH=.*krt-bin-/m);
    expect(env).not.toContain(grantToken);
    expect(env).not.toContain(grants.address);
    const after = await fetch(`${url}/v1/grants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ artifactId: 'notes.txt', size: 1, sha256: 'a'.repeat(64) }),
    });
    expect(after.status).toBe(401);
  });
});
