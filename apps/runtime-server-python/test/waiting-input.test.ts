import { createHash, randomUUID } from 'node:crypto';
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
const STATE = { draft: 'Q4 report', items: [1, 2, 3], note: 'Zoë' };
/** What krt.wait_for_input stores for STATE: compact JSON, UTF-8. */
const STATE_BYTES = Buffer.from(JSON.stringify(STATE), 'utf8');

const WAIT = `
import krt, subprocess
subprocess.Popen(["sleep", "300"])
print("waiting")
krt.wait_for_input(${JSON.stringify(SCHEMA)}, ${JSON.stringify(STATE)})
print("not reached")
`;

const REFUSED = `
import krt
try:
    krt.wait_for_input(${JSON.stringify(SCHEMA)}, {"step": 1})
except krt.InputError as e:
    print(e.code, e.status, e.message)
for schema, checkpoint in [({"description": "x" * 20000}, {}), (True, b"x" * (1024 * 1024 + 1))]:
    try:
        krt.wait_for_input(schema, checkpoint)
    except krt.InputError as e:
        print(e.code, e.status)
print("still running")
`;

const RESUMED = `
import json, krt, os
state = krt.resumed()
if state is None:
    print(json.dumps({"resumed": None, "env": sorted(k for k in os.environ if k in ("KRT_CHECKPOINT_FILE", "KRT_INPUT_FILE", "KRT_RESPONSE_ID", "KRT_RESUMED_FROM_ATTEMPT"))}))
else:
    print(json.dumps({"checkpoint": state.checkpoint, "input": state.input, "responseId": state.response_id, "from": state.resumed_from_attempt}))
`;

describe('runtime-server-python: waiting for input', () => {
  let server: ServerProcess;
  let grants: ArtifactGrantsStub;
  let workdir: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-py-wait-'));
    writeFileSync(join(workdir, 'wait.py'), WAIT);
    writeFileSync(join(workdir, 'refused.py'), REFUSED);
    writeFileSync(join(workdir, 'resumed.py'), RESUMED);
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

  it('krt.wait_for_input stores the checkpoint, runtimed records the wait, and the execution ends WAITING_INPUT with nothing left running', async () => {
    const token = randomUUID();
    const req = request('wait.py', token);
    const { lines, exited, liveAtExit } = await executeToEnd(server.client, req);
    expect(lines).toEqual(['waiting']);
    expect(exited?.reason).toBe(ExitReason.EXIT_REASON_WAITING_INPUT);
    expect(liveAtExit).toEqual([]);
    const sha256 = createHash('sha256').update(STATE_BYTES).digest('hex');
    expect(grants.checkpointGrants.filter((g) => g.grantToken === token)).toEqual([
      { grantToken: token, size: STATE_BYTES.byteLength, sha256 },
    ]);
    const stored = grants.puts.filter((p) => p.path.startsWith(grants.checkpointPath(token)));
    expect(stored.map((p) => p.body?.toString('utf8'))).toEqual([STATE_BYTES.toString('utf8')]);
    expect(stored[0]?.sha256).toBe(sha256);
    const [awaited] = grants.awaits.filter((a) => a.grantToken === token);
    expect(awaited).toMatchObject({ checkpointSize: STATE_BYTES.byteLength, checkpointSha256: sha256 });
    expect(JSON.parse(awaited?.schemaJson ?? '')).toEqual(SCHEMA);
    expect((await server.client.getExecution({ runUid: req.runUid, attempt: 1 })).exited?.reason).toBe(
      ExitReason.EXIT_REASON_WAITING_INPUT,
    );
  });

  it('raises krt.InputError with the code of a refusal, checks bounds before asking, and the task goes on', async () => {
    const token = randomUUID();
    grants.awaitRefusals.set(token, { code: 'OwnerUnavailable', message: 'the Pod Lease of runtimed has expired' });
    const { lines, exited } = await executeToEnd(server.client, request('refused.py', token));
    expect(lines).toEqual([
      'OwnerUnavailable 503 the Pod Lease of runtimed has expired',
      'InputSchemaInvalid None',
      'CheckpointTooLarge None',
      'still running',
    ]);
    expect(exited).toMatchObject({ reason: ExitReason.EXIT_REASON_COMPLETED, exitCode: 0 });
    // Only the first reached runtimed.
    expect(grants.checkpointGrants.filter((g) => g.grantToken === token)).toHaveLength(1);
  });

  it('answers CheckpointUnsupported to an execution without artifacts access', async () => {
    writeFileSync(
      join(workdir, 'unsupported.py'),
      'import krt\ntry:\n    krt.wait_for_input(True, {})\nexcept krt.InputError as e:\n    print(e.code)\n    print(e.message)\n',
    );
    const { lines, exited } = await executeToEnd(server.client, request('unsupported.py', undefined));
    expect(lines[0]).toBe('CheckpointUnsupported');
    expect(lines[1]).toMatch(/spec\.artifacts.*checkpoint-v1/);
    expect(exited?.reason).toBe(ExitReason.EXIT_REASON_COMPLETED);
  });

  it('krt.resumed() gives a continuation its checkpoint and response, and a first attempt None', async () => {
    const resume = { checkpoint: STATE_BYTES, checkpointAttempt: 1, inputJson: '{"approved": true}', responseId: 'approval-7' };
    const continued = await executeToEnd(server.client, request('resumed.py', randomUUID(), { attempt: 2, executionId: 'c/2', resume }));
    expect(JSON.parse(continued.lines.join(''))).toEqual({
      checkpoint: STATE,
      input: { approved: true },
      responseId: 'approval-7',
      from: 1,
    });
    const first = await executeToEnd(server.client, request('resumed.py', randomUUID()));
    expect(JSON.parse(first.lines.join(''))).toEqual({ resumed: null, env: [] });
  });
});
