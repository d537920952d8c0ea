import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { executeToEnd, executionRequest, startArtifactGrantsStub, startServerProcess } from '@kruntimes/testing';
import type { ArtifactGrantsStub, ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const DATA = randomBytes(300_000);
const SHA = createHash('sha256').update(DATA).digest('hex');
const DECLARED = [
  { artifactId: 'data.bin', maxBytes: 1_000_000, mediaType: 'application/octet-stream', optional: false },
  { artifactId: 'small.txt', maxBytes: 10, mediaType: 'text/plain', optional: true },
];

const PUT = `
import json, krt
print(json.dumps(krt.artifacts.put("data.bin", "data.bin")))
`;

const REFUSED = `
import krt, sys
for args in [("data.bin", "data.bin"), ("other", "data.bin"), ("small.txt", "data.bin")]:
    try:
        krt.artifacts.put(*args)
    except krt.artifacts.ArtifactError as e:
        print(e.code, e.status)
`;

const PROBE = `
import json, os, urllib.request, urllib.error
def status(path, token=None, method="POST"):
    headers = {} if token is None else {"Authorization": "Bearer " + token}
    req = urllib.request.Request(os.environ["KRT_ARTIFACTS_URL"] + path, data=b"{}", method=method, headers=headers)
    try:
        return urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as e:
        return [e.code, json.loads(e.read())["code"]]
token = os.environ["KRT_ARTIFACTS_TOKEN"]
print(json.dumps({
    "env": dict(os.environ),
    "none": status("/v1/grants"),
    "wrong": status("/v1/grants", ("A" if token[0] != "A" else "B") + token[1:]),
    "route": status("/v1/nothing", token),
    "method": status("/v1/manifest", token, "PUT"),
    "empty": status("/v1/manifest", token),
}))
`;

describe('runtime-server-python: artifacts', () => {
  let server: ServerProcess;
  let grants: ArtifactGrantsStub;
  let workdir: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-py-art-'));
    writeFileSync(join(workdir, 'data.bin'), DATA);
    writeFileSync(join(workdir, 'put.py'), PUT);
    writeFileSync(join(workdir, 'refused.py'), REFUSED);
    writeFileSync(join(workdir, 'probe.py'), PROBE);
    grants = await startArtifactGrantsStub();
    server = await startServerProcess(MAIN);
  });

  afterAll(async () => {
    await server.stop();
    await grants.close();
    rmSync(workdir, { recursive: true, force: true });
  });

  const run = async (entrypoint: string, grantToken: string = randomUUID(), withArtifacts = true) => {
    const request = executionRequest({
      workdir,
      entrypoint,
      ...(withArtifacts ? { grants: { address: grants.address, token: grantToken, declared: DECLARED } } : {}),
    });
    const { lines, exited } = await executeToEnd(server.client, request);
    return { runUid: request.runUid, lines, exited, grantToken };
  };

  it('krt.artifacts.put uploads the exact bytes with the grant headers, and the manifest arrives in ExecutionExited and GetExecution', async () => {
    const before = grants.puts.length;
    const { runUid, lines, exited, grantToken } = await run('put.py');
    expect(exited?.exitCode).toBe(0);
    const entry = { artifactId: 'data.bin', sha256: SHA, size: DATA.byteLength, mediaType: 'application/octet-stream' };
    expect(JSON.parse(lines.join('\n'))).toEqual({
      artifactId: 'data.bin',
      size: DATA.byteLength,
      sha256: SHA,
      mediaType: entry.mediaType,
    });
    expect(grants.grants.at(-1)).toEqual({ grantToken, ...entry });
    expect(grants.puts.slice(before)).toEqual([
      {
        method: 'PUT',
        path: '/bucket/data.bin?X-Amz-Expires=60',
        size: DATA.byteLength,
        sha256: SHA,
        headers: expect.objectContaining({
          'content-length': String(DATA.byteLength),
          'content-type': 'application/octet-stream',
          'x-amz-checksum-sha256': Buffer.from(SHA, 'hex').toString('base64'),
        }) as unknown,
      },
    ]);
    // Nothing but the signed headers and Host.
    expect(Object.keys(grants.puts.at(-1)?.headers ?? {}).sort()).toEqual([
      'content-length',
      'content-type',
      'host',
      'x-amz-checksum-sha256',
    ]);
    expect(exited?.manifest).toEqual([entry]);
    const status = await server.client.getExecution({ runUid, attempt: 1 });
    expect(status.exited?.manifest).toEqual([entry]);
  });

  it('brings refusals to user code with their code: runtimed refusing a stale attempt, an undeclared ID, a file over maxBytes', async () => {
    const token = randomUUID();
    grants.staleTokens.add(token);
    const asked = grants.grants.length;
    const { lines, exited } = await run('refused.py', token);
    expect(lines).toEqual(['StaleAttempt 409', 'ArtifactNotDeclared 400', 'ArtifactTooLarge 413']);
    // Only the declared, small enough one reached runtimed.
    expect(grants.grants.length).toBe(asked + 1);
    expect(exited?.manifest).toEqual([]);
  });

  it('gives user code its own endpoint token and URL but never the grant token, and refuses wrong tokens, routes and methods', async () => {
    const { lines, exited, grantToken } = await run('probe.py');
    expect(exited?.exitCode).toBe(0);
    const probe = JSON.parse(lines.join('\n')) as Record<string, unknown> & { env: Record<string, string> };
    expect(probe.env.KRT_ARTIFACTS_URL).toMatch(/^http:\/\/127\.0\.0\.\d+:\d+$/);
    expect(probe.env.KRT_ARTIFACTS_TOKEN).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(probe.env)).not.toContain(grantToken);
    expect(JSON.stringify(probe.env)).not.toContain(grants.address);
    expect(probe).toMatchObject({
      none: [401, 'Unauthenticated'],
      wrong: [401, 'Unauthenticated'],
      route: [404, 'RouteNotFound'],
      method: [405, 'MethodNotAllowed'],
      empty: [400, 'InvalidRequest'],
    });
    // The execution has ended: its token no longer works.
    const after = await fetch(`${probe.env.KRT_ARTIFACTS_URL}/v1/manifest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${probe.env.KRT_ARTIFACTS_TOKEN}` },
      body: JSON.stringify({ artifactId: 'small.txt', size: 1, sha256: 'a'.repeat(64) }),
    });
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ code: 'Unauthenticated' });
  });

  it('gives a task without artifacts no endpoint', async () => {
    writeFileSync(join(workdir, 'plain.py'), 'import os\nprint(os.environ.get("KRT_ARTIFACTS_URL", "none"))\n');
    const { lines, exited } = await run('plain.py', '', false);
    expect(lines).toEqual(['none']);
    expect(exited?.manifest).toEqual([]);
  });
});
