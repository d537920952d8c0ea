// krt's local ArtifactGrants and PUT receiver over real loopback sockets: a gRPC client
// as the Runtime Server dials it, HTTP PUTs as the helpers send them.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { METADATA_KEYS, artifactGrantsV1 } from '@kruntimes/proto';
import { ClientError, Metadata, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { pino } from 'pino';
import { LocalArtifacts } from '../src/local-artifacts.ts';

const REPORT = Buffer.from('day,total\n2026-12-03,42\n');
const sha256 = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

let dir: string;
let artifacts: LocalArtifacts;
let channel: Channel;
let client: Client<typeof artifactGrantsV1.ArtifactGrantsDefinition>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'local-artifacts-'));
  artifacts = await LocalArtifacts.start(
    join(dir, 'artifacts'),
    {
      store: 'results',
      outputs: [
        { id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' },
        { id: 'debug.log', maxBytes: 1024, mediaType: 'text/plain', optional: true },
      ],
    },
    pino({ level: 'silent' }),
  );
  channel = createChannel(artifacts.access().grantAddress);
  client = createClient(artifactGrantsV1.ArtifactGrantsDefinition, channel);
});

afterEach(async () => {
  channel.close();
  await artifacts.close();
  await rm(dir, { recursive: true, force: true });
});

async function grant(request: Partial<artifactGrantsV1.GrantUploadRequest>): Promise<artifactGrantsV1.GrantUploadResponse> {
  return client.grantUpload({
    grantToken: artifacts.access().grantToken,
    artifactId: 'report.csv',
    size: REPORT.length,
    sha256: sha256(REPORT),
    mediaType: 'text/csv',
    ...request,
  });
}

/** The kruntimes error code a refused grant carries in its trailer. */
async function refusal(request: Partial<artifactGrantsV1.GrantUploadRequest>): Promise<string | undefined> {
  let trailer = Metadata();
  try {
    await client.grantUpload(
      {
        grantToken: artifacts.access().grantToken,
        artifactId: 'report.csv',
        size: REPORT.length,
        sha256: sha256(REPORT),
        mediaType: 'text/csv',
        ...request,
      },
      { onTrailer: (t) => (trailer = t) },
    );
  } catch (error) {
    expect(error).toBeInstanceOf(ClientError);
    return trailer.get(METADATA_KEYS.errorCode);
  }
  return undefined;
}

async function put(answer: artifactGrantsV1.GrantUploadResponse, body: Buffer, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(answer.url, { method: 'PUT', headers: { ...answer.headers, ...headers }, body });
  await response.arrayBuffer();
  return response.status;
}

test('a granted upload of exactly the granted bytes is stored, once, and verified at exit 0', async () => {
  const answer = await grant({});
  expect(answer.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/uploads\/[A-Za-z0-9_-]{32}\/report\.csv$/);
  expect(answer.headers).toEqual({
    'content-length': String(REPORT.length),
    'content-type': 'text/csv',
    'x-amz-checksum-sha256': Buffer.from(sha256(REPORT), 'hex').toString('base64'),
  });
  expect(await put(answer, REPORT)).toBe(200);
  expect(await readFile(join(dir, 'artifacts', 'report.csv'))).toEqual(REPORT);
  // A grant is for one upload.
  expect(await put(answer, REPORT)).toBe(403);
  const check = await artifacts.verify([{ artifactId: 'report.csv', sha256: sha256(REPORT), size: REPORT.length, mediaType: '' }]);
  expect(check).toEqual({
    type: 'verified',
    records: [{ id: 'report.csv', digest: `sha256:${sha256(REPORT)}`, size: REPORT.length, mediaType: 'text/csv' }],
  });
});

test('a body that is not the granted one is refused and not stored', async () => {
  const other = Buffer.from(REPORT);
  other[0] = 'D'.charCodeAt(0);
  expect(await put(await grant({}), other)).toBe(400);
  expect(await put(await grant({}), REPORT, { 'content-type': 'text/plain' })).toBe(400);
  expect(await readdir(join(dir, 'artifacts'))).toEqual([]);
});

test.each<[string, Partial<artifactGrantsV1.GrantUploadRequest>, string]>([
  ['an undeclared artifact', { artifactId: 'other.csv' }, 'ArtifactNotDeclared'],
  ['another media type', { mediaType: 'application/json' }, 'ArtifactNotDeclared'],
  ['more than maxBytes', { size: 2048 }, 'ArtifactTooLarge'],
  ['a malformed digest', { sha256: 'abc' }, 'InvalidRequest'],
  ['an unknown token', { grantToken: 'not-the-token' }, 'StaleAttempt'],
])('refuses a grant for %s (%s)', async (_what, request, code) => {
  expect(await refusal(request)).toBe(code);
});

test('once the execution ended, its token and unused grants are refused', async () => {
  const token = artifacts.access().grantToken;
  const unused = await grant({});
  artifacts.withdraw();
  expect(await refusal({ grantToken: token })).toBe('StaleAttempt');
  expect(await put(unused, REPORT)).toBe(403);
});

test.each<[string, () => Promise<void>, RegExp]>([
  [
    'a required artifact not in the manifest',
    () => Promise.resolve(),
    /^ArtifactMissing: report\.csv is declared \(required\) but not in the manifest$/,
  ],
  [
    'a manifest entry whose file was never uploaded',
    () => Promise.resolve(),
    /^ArtifactMissing: report\.csv is in the manifest but not in the store$/,
  ],
  [
    'a file that differs from its manifest entry',
    async () => {
      await writeFile(join(dir, 'artifacts', 'report.csv'), Buffer.alloc(REPORT.length));
    },
    /^ArtifactInvalid: report\.csv: the manifest says sha256 /,
  ],
])('verify fails %s', async (what, prepare, message) => {
  await prepare();
  const manifest = what.startsWith('a required')
    ? []
    : [{ artifactId: 'report.csv', sha256: sha256(REPORT), size: REPORT.length, mediaType: 'text/csv' }];
  const check = await artifacts.verify(manifest);
  if (check.type !== 'failed') throw new Error(check.type);
  expect(`${check.reason}: ${check.message}`).toMatch(message);
});
