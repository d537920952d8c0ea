import { createHash, randomUUID } from 'node:crypto';
import { BOUNDS } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { startArtifactGrantsStub } from '@kruntimes/testing';
import type { ArtifactGrantsStub } from '@kruntimes/testing';
import { pino } from 'pino';
import { ArtifactEndpoint } from './artifact-endpoint.ts';
import type { ArtifactSession } from './artifact-endpoint.ts';
import { WAIT_REQUEST_BYTES, parseWaitRequest } from './wait-for-input.ts';

const logger = pino({ level: 'silent' });
const DECLARED = [{ id: 'out.txt', maxBytes: 100, mediaType: 'text/plain', optional: false }];
const SCHEMA = { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] };
const CHECKPOINT = Buffer.from('{"step":3}');

function refusalOf(body: unknown): string {
  try {
    parseWaitRequest(body);
    return 'accepted';
  } catch (error) {
    if (!(error instanceof KruntimesError)) throw error;
    return error.code;
  }
}

describe('parseWaitRequest', () => {
  it('takes a schema and base64 checkpoint bytes, and hashes the bytes itself', () => {
    const bytes = Buffer.from([0, 255, 1, 2, 3]);
    expect(parseWaitRequest({ schema: SCHEMA, checkpoint: bytes.toString('base64') })).toEqual({
      schemaJson: JSON.stringify(SCHEMA),
      checkpoint: bytes,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(parseWaitRequest({ schema: true, checkpoint: '' })).toMatchObject({ schemaJson: 'true', checkpoint: Buffer.alloc(0) });
  });

  it.each([
    ['not an object', [], 'InvalidRequest'],
    ['an unknown field', { schema: true, checkpoint: '', sha256: 'x' }, 'InvalidRequest'],
    ['no schema', { checkpoint: '' }, 'InvalidRequest'],
    ['a checkpoint that is not base64', { schema: true, checkpoint: 'a*b=' }, 'InvalidRequest'],
    ['a checkpoint that is not a string', { schema: true, checkpoint: [1, 2] }, 'InvalidRequest'],
    [
      'a checkpoint one byte over the bound',
      { schema: true, checkpoint: Buffer.alloc(BOUNDS.checkpointBytes + 1).toString('base64') },
      'CheckpointTooLarge',
    ],
    ['a schema that is a number', { schema: 3, checkpoint: '' }, 'InputSchemaInvalid'],
    ['a schema Ajv refuses', { schema: { type: 'no-such-type' }, checkpoint: '' }, 'InputSchemaInvalid'],
    ['a schema over the bound', { schema: { description: 'x'.repeat(BOUNDS.inputSchemaBytes) }, checkpoint: '' }, 'InputSchemaInvalid'],
  ])('refuses %s', (_name, body, code) => {
    expect(refusalOf(body)).toBe(code);
  });

  it('accepts a checkpoint of exactly the bound, and the body bound holds it with a schema at its bound', () => {
    const checkpoint = Buffer.alloc(BOUNDS.checkpointBytes).toString('base64');
    expect(refusalOf({ schema: true, checkpoint })).toBe('accepted');
    const schema = { description: '\u0001'.repeat(BOUNDS.inputSchemaBytes / 6 - 10) };
    expect(Buffer.byteLength(JSON.stringify({ schema, checkpoint }))).toBeLessThan(WAIT_REQUEST_BYTES);
  });
});

describe('POST /v1/wait-for-input', () => {
  let stub: ArtifactGrantsStub;
  let endpoint: ArtifactEndpoint;
  const events: string[] = [];
  const hooks = {
    waiting: (attempt: number) => events.push(`waiting ${String(attempt)}`),
    answered: () => events.push('answered'),
  };

  beforeAll(async () => {
    stub = await startArtifactGrantsStub();
    endpoint = await ArtifactEndpoint.start('127.0.0.1', logger);
  });
  afterAll(async () => {
    await endpoint.close();
    await stub.close();
  });
  beforeEach(() => {
    events.length = 0;
  });

  const open = (grantToken: string, withHooks = true): ArtifactSession =>
    endpoint.open({ grantAddress: stub.address, grantToken, declared: DECLARED }, logger, withHooks ? hooks : undefined);

  async function post(session: ArtifactSession, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${session.env.KRT_ARTIFACTS_URL ?? ''}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.env.KRT_ARTIFACTS_TOKEN ?? ''}` },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  }
  const wait = (session: ArtifactSession, checkpoint = CHECKPOINT) =>
    post(session, '/v1/wait-for-input', { schema: SCHEMA, checkpoint: checkpoint.toString('base64') });

  it('stores the checkpoint through the grant, asks runtimed to await input, then answers and ends the execution', async () => {
    const token = randomUUID();
    stub.attempts.set(token, 4);
    const session = open(token);
    expect(await wait(session)).toEqual({ status: 200, body: { attempt: 4 } });
    const sha256 = createHash('sha256').update(CHECKPOINT).digest('hex');
    expect(stub.checkpointGrants.filter((g) => g.grantToken === token)).toEqual([
      { grantToken: token, size: CHECKPOINT.byteLength, sha256 },
    ]);
    const put = stub.puts.find((p) => p.path.startsWith(stub.checkpointPath(token)));
    expect(put).toMatchObject({ method: 'PUT', size: CHECKPOINT.byteLength, sha256, body: CHECKPOINT });
    // Exactly the grant's headers, plus what HTTP itself needs.
    expect(Object.keys(put?.headers ?? {}).sort()).toEqual([
      'connection',
      'content-length',
      'content-type',
      'host',
      'x-amz-checksum-sha256',
    ]);
    expect(stub.awaits.filter((a) => a.grantToken === token)).toEqual([
      { grantToken: token, checkpointSize: CHECKPOINT.byteLength, checkpointSha256: sha256, schemaJson: JSON.stringify(SCHEMA) },
    ]);
    await session.settled();
    expect(events).toEqual(['waiting 4', 'answered']);
    // The attempt is over: no second wait, no more grants.
    expect(await wait(session)).toMatchObject({
      status: 400,
      body: { code: 'InvalidRequest', message: expect.stringContaining('already waits') as unknown },
    });
    expect(await post(session, '/v1/grants', { artifactId: 'out.txt', size: 1, sha256: 'a'.repeat(64) })).toMatchObject({
      status: 409,
      body: { code: 'StaleAttempt' },
    });
    session.close();
  });

  it('refuses a second wait while one is in flight, and lets a refused one be tried again', async () => {
    const token = randomUUID();
    let release = (): void => undefined;
    stub.awaitGates.set(
      token,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    stub.awaitRefusals.set(token, { code: 'OwnerUnavailable', message: 'the Pod Lease has expired' });
    const session = open(token);
    const first = wait(session);
    const awaits = stub.awaits.length;
    await until(() => stub.awaits.length > awaits);
    expect(await wait(session)).toMatchObject({
      status: 400,
      body: { code: 'InvalidRequest', message: expect.stringContaining('one wait at a time') as unknown },
    });
    release();
    expect(await first).toEqual({ status: 503, body: { code: 'OwnerUnavailable', message: 'the Pod Lease has expired' } });
    stub.awaitRefusals.delete(token);
    expect(await wait(session)).toEqual({ status: 200, body: { attempt: 1 } });
    await session.settled();
    expect(events).toEqual(['waiting 1', 'answered']);
    session.close();
  });

  it.each([
    ['GrantCheckpoint', 'CheckpointUnsupported', 409],
    ['GrantCheckpoint', 'ArtifactStoreUnavailable', 503],
    ['AwaitInput', 'InputSchemaInvalid', 400],
    ['AwaitInput', 'CheckpointNotStored', 409],
    ['AwaitInput', 'StaleAttempt', 409],
  ] as const)('answers a refusal of %s (%s) with its code and status; the execution goes on', async (rpc, code, status) => {
    const token = randomUUID();
    (rpc === 'GrantCheckpoint' ? stub.checkpointRefusals : stub.awaitRefusals).set(token, { code, message: `refused: ${code}` });
    const session = open(token);
    expect(await wait(session)).toEqual({ status, body: { code, message: `refused: ${code}` } });
    await session.settled();
    expect(events).toEqual([]);
    session.close();
  });

  it('refuses over its bounds before asking runtimed', async () => {
    const token = randomUUID();
    const session = open(token);
    const over = Buffer.alloc(BOUNDS.checkpointBytes + 1);
    expect(await wait(session, over)).toMatchObject({ status: 413, body: { code: 'CheckpointTooLarge' } });
    expect(
      await post(session, '/v1/wait-for-input', { schema: { description: 'x'.repeat(BOUNDS.inputSchemaBytes) }, checkpoint: '' }),
    ).toMatchObject({ status: 400, body: { code: 'InputSchemaInvalid' } });
    expect(await post(session, '/v1/wait-for-input', 'x'.repeat(WAIT_REQUEST_BYTES + 1))).toMatchObject({
      status: 413,
      body: { code: 'PayloadTooLarge' },
    });
    expect(await post(session, '/v1/wait-for-input', '{"schema": ')).toMatchObject({ status: 400, body: { code: 'InvalidRequest' } });
    expect(stub.checkpointGrants.filter((g) => g.grantToken === token)).toEqual([]);
    session.close();
  });

  it('answers CheckpointUnsupported for a session that cannot end waiting, and Unauthenticated once the execution ended', async () => {
    const unsupported = open(randomUUID(), false);
    expect(await wait(unsupported)).toMatchObject({ status: 409, body: { code: 'CheckpointUnsupported' } });
    unsupported.close();
    expect(await wait(unsupported)).toMatchObject({ status: 401, body: { code: 'Unauthenticated' } });
  });
});

async function until(probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
