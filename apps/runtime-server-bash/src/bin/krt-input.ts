// krt-input: waiting for input from Bash task code (the Python side is krt.wait_for_input),
// on the bash Runtime Server's PATH through a wrapper that runs it with the server's node.
//   krt-input wait --schema JSON|@FILE --checkpoint FILE|-
// stores FILE (or stdin) as the attempt's checkpoint and has the Run wait for a response
// that satisfies the JSON Schema. On success it does not return: the Runtime Server ends
// every process of the attempt, this script's shell included. A continuation attempt
// finds the checkpoint and the response through $KRT_CHECKPOINT_FILE, $KRT_INPUT_FILE
// (the response data as JSON), $KRT_RESPONSE_ID and $KRT_RESUMED_FROM_ATTEMPT; on a first
// attempt none of them is set.
// Exit 1: refused (the code and message on stderr; the task goes on); 2: usage.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Refused, Usage, postEndpoint, reportFailure } from './local-endpoint.ts';

const USAGE = 'usage: krt-input wait --schema JSON|@FILE --checkpoint FILE|-';
const CHECKPOINT_BYTES = 1024 * 1024;
const INPUT_SCHEMA_BYTES = 16 * 1024;
// The Runtime Server grants, uploads and has runtimed verify and record.
const WAIT_TIMEOUT_MS = 180_000;
// After a successful wait the Runtime Server ends the group at once; this is the fallback.
const ENDING_WAIT_MS = 60_000;

async function readSchema(argument: string): Promise<unknown> {
  const text = argument.startsWith('@') ? await readFile(argument.slice(1), 'utf8') : argument;
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    throw new Refused('InputSchemaInvalid', `the input schema is not JSON: ${(error as Error).message}`);
  }
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw new Refused('InputSchemaInvalid', 'the input schema must be a JSON Schema: an object or a boolean');
  }
  const size = Buffer.byteLength(JSON.stringify(schema));
  if (size > INPUT_SCHEMA_BYTES) {
    throw new Refused('InputSchemaInvalid', `the input schema is ${String(size)} bytes as JSON, over ${String(INPUT_SCHEMA_BYTES)}`);
  }
  return schema;
}

/** The checkpoint's bytes, read no further than one byte past the bound. */
async function readCheckpoint(file: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stream = file === '-' ? process.stdin : createReadStream(file, { end: CHECKPOINT_BYTES });
  for await (const chunk of stream) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).byteLength;
    if (size > CHECKPOINT_BYTES) throw new Refused('CheckpointTooLarge', `the checkpoint is over ${String(CHECKPOINT_BYTES)} bytes`);
  }
  return Buffer.concat(chunks);
}

async function wait(argv: readonly string[]): Promise<unknown> {
  let values: { schema?: string; checkpoint?: string };
  try {
    ({ values } = parseArgs({ args: [...argv], options: { schema: { type: 'string' }, checkpoint: { type: 'string' } }, strict: true }));
  } catch (error) {
    throw new Usage(`${(error as Error).message}\n${USAGE}`);
  }
  if (values.schema === undefined || values.checkpoint === undefined) throw new Usage(USAGE);
  const schema = await readSchema(values.schema);
  const checkpoint = await readCheckpoint(values.checkpoint);
  return postEndpoint(
    '/v1/wait-for-input',
    { schema, checkpoint: checkpoint.toString('base64') },
    WAIT_TIMEOUT_MS,
    new Refused(
      'CheckpointUnsupported',
      'KRT_ARTIFACTS_URL is not set: waiting for input needs a task Run with spec.artifacts (an ArtifactStore) on a Runtime that declares capability checkpoint-v1',
    ),
  );
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command !== 'wait') throw new Usage(USAGE);
  const answer = await wait(rest);
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  // Never let the script go on: the attempt is over. The Runtime Server is ending the
  // group; should it not have within the bound, end it here (pid 0: our own group).
  await new Promise((resolve) => setTimeout(resolve, ENDING_WAIT_MS));
  process.kill(0, 'SIGKILL');
} catch (error) {
  reportFailure('krt-input', error);
}
