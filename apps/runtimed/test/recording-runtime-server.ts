// A Runtime Server for runtimed's waiting-for-input tests, run by the local node as the
// Runtime Pod's second container (image kruntimes/runtime-server-recording). It plays the
// Runtime Server's side of the protocol from the Run's env instead of running code:
//   STUB_MODE=wait             first attempt: GrantCheckpoint, PUT STUB_CHECKPOINT, AwaitInput
//                              with STUB_SCHEMA, then end EXIT_REASON_WAITING_INPUT; an
//                              attempt given ExecuteRequest.resume records it and exits 0
//   STUB_MODE=wait-unrecorded  ends EXIT_REASON_WAITING_INPUT without asking runtimed
//   (otherwise)                records the request and exits 0
// What it saw goes to STUB_RECORD_DIR/<run UID>-<attempt>.json. Loopback only.
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { artifactGrantsV1, healthV1, runtimeServerV1 } from '@kruntimes/proto';
import { ClientError, ServerError, Status, createChannel, createClient, createServer } from 'nice-grpc';

const { ExitReason } = runtimeServerV1;

const listen = process.argv[process.argv.indexOf('--listen') + 1] ?? '';
if (!/^127\.\d+\.\d+\.\d+:\d+$/.test(listen)) throw new Error(`--listen must be a loopback host:port, not ${listen}`);

function exited(reason: runtimeServerV1.ExitReason, exitCode: number): runtimeServerV1.ExecuteEvent {
  return {
    event: {
      $case: 'exited',
      exited: { reason, exitCode, signal: '', outputs: {}, outputsError: '', message: '', time: new Date(), manifest: [] },
    },
  };
}

async function record(request: runtimeServerV1.ExecuteRequest, what: Record<string, unknown>): Promise<void> {
  const dir = request.env.STUB_RECORD_DIR;
  if (dir === undefined) return;
  await writeFile(join(dir, `${request.runUid}-${String(request.attempt)}.json`), JSON.stringify(what));
}

/** The Runtime Server's part of krt.wait_for_input: checkpoint stored through runtimed's grant, then AwaitInput. */
async function waitForInput(request: runtimeServerV1.ExecuteRequest): Promise<Record<string, unknown>> {
  const access = request.artifacts;
  if (access === undefined) return { error: 'no artifacts access' };
  const channel = createChannel(access.grantAddress);
  const grants = createClient(artifactGrantsV1.ArtifactGrantsDefinition, channel);
  const body = Buffer.from(request.env.STUB_CHECKPOINT ?? '', 'utf8');
  const sha256 = createHash('sha256').update(body).digest('hex');
  try {
    const grant = await grants.grantCheckpoint({ grantToken: access.grantToken, size: body.length, sha256 });
    const put = await fetch(grant.url, { method: grant.method, headers: grant.headers, body });
    if (!put.ok) return { error: `PUT ${String(put.status)}` };
    const answer = await grants.awaitInput({
      grantToken: access.grantToken,
      checkpointSize: body.length,
      checkpointSha256: sha256,
      schemaJson: request.env.STUB_SCHEMA ?? 'true',
    });
    return { awaited: answer.attempt };
  } catch (error) {
    return { error: error instanceof ClientError ? error.details : String(error) };
  } finally {
    channel.close();
  }
}

const unimplemented = (): never => {
  throw new ServerError(Status.UNIMPLEMENTED, 'this recording Runtime Server runs tasks only');
};

const server = createServer();
server.add(healthV1.HealthDefinition, {
  check: () => Promise.resolve({ status: healthV1.HealthCheckResponse_ServingStatus.SERVING }),
  watch: unimplemented,
});
server.add(runtimeServerV1.RuntimeServerDefinition, {
  registerFunction: unimplemented,
  functionStatus: unimplemented,
  invokeFunction: unimplemented,
  unregisterFunction: unimplemented,
  cancelExecution: () => Promise.resolve({ found: false }),
  getExecution: () => Promise.resolve({ state: runtimeServerV1.ExecutionState.EXECUTION_STATE_UNKNOWN, executionId: '' }),
  async *execute(request) {
    yield { event: { $case: 'started', started: { pid: process.pid, time: new Date() } } };
    const resume = request.resume;
    if (resume !== undefined) {
      await record(request, {
        attempt: request.attempt,
        resume: {
          checkpoint: resume.checkpoint.toString('utf8'),
          checkpointAttempt: resume.checkpointAttempt,
          inputJson: resume.inputJson,
          responseId: resume.responseId,
        },
      });
      yield exited(ExitReason.EXIT_REASON_COMPLETED, 0);
      return;
    }
    switch (request.env.STUB_MODE) {
      case 'wait': {
        const outcome = await waitForInput(request);
        await record(request, { attempt: request.attempt, ...outcome });
        yield outcome.error === undefined ? exited(ExitReason.EXIT_REASON_WAITING_INPUT, -1) : exited(ExitReason.EXIT_REASON_COMPLETED, 3);
        return;
      }
      case 'wait-unrecorded':
        yield exited(ExitReason.EXIT_REASON_WAITING_INPUT, -1);
        return;
      case undefined:
      default:
        await record(request, { attempt: request.attempt });
        yield exited(ExitReason.EXIT_REASON_COMPLETED, 0);
    }
  },
});
const port = await server.listen(listen);
process.stdout.write(`${JSON.stringify({ msg: 'runtime server listening', port })}\n`);
const stop = (): void => {
  void server.shutdown().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
