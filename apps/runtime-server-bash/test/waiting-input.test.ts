import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeServerV1 } from '@kruntimes/proto';
import { executeToEnd, executionRequest, startArtifactGrantsStub, startServerProcess } from '@kruntimes/testing';
import type { ArtifactGrantsStub, ServerProcess } from '@kruntimes/testing';

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const { ExitReason } = runtimeServerV1;
const DECLARED = [{ artifactId: 'report.csv', maxBytes: 1000, mediaType: 'text/csv', optional: true }];
const SCHEMA = { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] };
const CHECKPOINT = randomBytes(50_000);

const WAIT = `
sleep 300 &
echo "waiting"
krt-input wait --schema @schema.json --checkpoint state.bin
echo "not reached: $?"
`;

const REFUSED = `
krt-input wait --schema '{"type":"object"}' --checkpoint - < state.bin; echo "refused: $?"
krt-input wait --schema '[1]' --checkpoint state.bin; echo "not a schema: $?"
head -c 1048577 /dev/zero > big.bin
krt-input wait --schema true --checkpoint big.bin; echo "too large: $?"
krt-input wait --schema true; echo "usage: $?"
echo "still running"
`;

const RESUMED = `
echo "input: $(cat "$KRT_INPUT_FILE")"
echo "checkpoint: $(sha256sum < "$KRT_CHECKPOINT_FILE" | cut -d' ' -f1)"
echo "response: $KRT_RESPONSE_ID from $KRT_RESUMED_FROM_ATTEMPT"
`;

const FIRST = `
echo "set: \${KRT_CHECKPOINT_FILE+c}\${KRT_INPUT_FILE+i}\${KRT_RESPONSE_ID+r}\${KRT_RESUMED_FROM_ATTEMPT+a}."
`;

describe('runtime-server-bash: waiting for input', () => {
  let server: ServerProcess;
  let grants: ArtifactGrantsStub;
  let workdir: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-sh-wait-'));
    writeFileSync(join(workdir, 'state.bin'), CHECKPOINT);
    writeFileSync(join(workdir, 'schema.json'), JSON.stringify(SCHEMA, null, 2));
    writeFileSync(join(workdir, 'wait.sh'), WAIT);
    writeFileSync(join(workdir, 'refused.sh'), REFUSED);
    writeFileSync(join(workdir, 'resumed.sh'), RESUMED);
    writeFileSync(join(workdir, 'first.sh'), FIRST);
    writeFileSync(join(workdir, 'unsupported.sh'), 'krt-input wait --schema true --checkpoint state.bin; echo "exit: $?"\n');
    grants = await startArtifactGrantsStub();
    server = await startServerProcess(MAIN);
  });

  afterAll(async () => {
    await server.stop();
    await grants.close();
    rmSync(workdir, { recursive: true, force: true });
  });

  const request = (entrypoint: string, grantToken: string | undefined, extra: Partial<runtimeServerV1.ExecuteRequest> = {}) =>
    executionRequest({
      workdir,
      entrypoint,
      ...(grantToken === undefined ? {} : { grants: { address: grants.address, token: grantToken, declared: DECLARED } }),
      extra,
    });

  it('krt-input wait stores the checkpoint, and the execution ends WAITING_INPUT with nothing of the script left running', async () => {
    const token = randomUUID();
    const req = request('wait.sh', token);
    const { lines, exited, liveAtExit } = await executeToEnd(server.client, req);
    expect(lines.filter((line) => line.startsWith('not reached'))).toEqual([]);
    expect(lines[0]).toBe('waiting');
    expect(exited?.reason).toBe(ExitReason.EXIT_REASON_WAITING_INPUT);
    expect(liveAtExit).toEqual([]);
    const sha256 = createHash('sha256').update(CHECKPOINT).digest('hex');
    const stored = grants.puts.filter((p) => p.path.startsWith(grants.checkpointPath(token)));
    expect(stored).toHaveLength(1);
    expect(stored[0]?.body?.equals(CHECKPOINT)).toBe(true);
    const [awaited] = grants.awaits.filter((a) => a.grantToken === token);
    expect(awaited).toMatchObject({ checkpointSize: CHECKPOINT.byteLength, checkpointSha256: sha256 });
    expect(JSON.parse(awaited?.schemaJson ?? '')).toEqual(SCHEMA);
    expect((await server.client.getExecution({ runUid: req.runUid, attempt: 1 })).exited?.reason).toBe(
      ExitReason.EXIT_REASON_WAITING_INPUT,
    );
  });

  it('exits 1 with the code on stderr when refused (runtimed, bounds before asking) and 2 on misuse; the script goes on', async () => {
    const token = randomUUID();
    grants.checkpointRefusals.set(token, { code: 'CheckpointUnsupported', message: 'the Runtime does not declare checkpoint-v1' });
    const { stdout, stderr, exited } = await executeToEnd(server.client, request('refused.sh', token));
    expect(stdout).toEqual(['refused: 1', 'not a schema: 1', 'too large: 1', 'usage: 2', 'still running']);
    expect(stderr[0]).toBe('krt-input: CheckpointUnsupported: the Runtime does not declare checkpoint-v1');
    expect(stderr[1]).toMatch(/^krt-input: InputSchemaInvalid: /);
    expect(stderr[2]).toMatch(/^krt-input: CheckpointTooLarge: /);
    expect(exited).toMatchObject({ reason: ExitReason.EXIT_REASON_COMPLETED, exitCode: 0 });
    // Only the first reached runtimed; it was refused before anything was stored.
    expect(grants.checkpointGrants.filter((g) => g.grantToken === token)).toHaveLength(1);
    expect(grants.awaits.filter((a) => a.grantToken === token)).toEqual([]);
  });

  it('answers CheckpointUnsupported to an execution without artifacts access', async () => {
    const { stdout, stderr } = await executeToEnd(server.client, request('unsupported.sh', undefined));
    expect(stdout).toEqual(['exit: 1']);
    expect(stderr[0]).toMatch(/^krt-input: CheckpointUnsupported: .*spec\.artifacts.*checkpoint-v1/);
  });

  it('a continuation reads the response from $KRT_INPUT_FILE and the checkpoint from $KRT_CHECKPOINT_FILE; a first attempt has neither', async () => {
    const resume = { checkpoint: CHECKPOINT, checkpointAttempt: 1, inputJson: '{"approved":false,"why":"too late"}', responseId: 'r-9' };
    const continued = await executeToEnd(server.client, request('resumed.sh', randomUUID(), { attempt: 2, resume }));
    expect(continued.stdout).toEqual([
      'input: {"approved":false,"why":"too late"}',
      `checkpoint: ${createHash('sha256').update(CHECKPOINT).digest('hex')}`,
      'response: r-9 from 1',
    ]);
    const first = await executeToEnd(server.client, request('first.sh', randomUUID()));
    expect(first.stdout).toEqual(['set: .']);
  });
});
