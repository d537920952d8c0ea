import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeServerV1 } from '@kruntimes/proto';
import { ServerError, Status, createChannel, createClientFactory, createServer } from 'nice-grpc';
import type { Server, ServerMiddleware } from 'nice-grpc';
import { runtimeServerTokenMiddleware } from './runtime-server-token.ts';

// A stand-in Runtime Server that expects `expected.token` (changed by a test, as a restart
// would) and counts what reached its service.
describe('runtimeServerTokenMiddleware', () => {
  let dir: string;
  let tokenFile: string;
  let server: Server;
  let address: string;
  const expected = { token: 'first' };
  const seen: string[] = [];
  let served = 0;

  const check: ServerMiddleware = async function* checkToken(call, context) {
    seen.push(context.metadata.get('authorization') ?? '');
    if (context.metadata.get('authorization') !== `Bearer ${expected.token}`) throw new ServerError(Status.UNAUTHENTICATED, 'no token');
    return yield* call.next(call.request, context);
  };

  beforeAll(async () => {
    server = createServer().use(check);
    const unimplemented = () => Promise.reject(new ServerError(Status.UNIMPLEMENTED, 'not in this stand-in'));
    const methods = Object.fromEntries(Object.keys(runtimeServerV1.RuntimeServerDefinition.methods).map((name) => [name, unimplemented]));
    server.add(runtimeServerV1.RuntimeServerDefinition, {
      ...methods,
      getExecution: () => {
        served++;
        return Promise.resolve({ state: runtimeServerV1.ExecutionState.EXECUTION_STATE_UNKNOWN, executionId: '' });
      },
    } as unknown as runtimeServerV1.RuntimeServerServiceImplementation);
    address = `127.0.0.1:${String(await server.listen('127.0.0.1:0'))}`;
  });

  afterAll(async () => {
    await server.shutdown();
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'token-'));
    tokenFile = join(dir, 'api-token');
    seen.length = 0;
    served = 0;
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const client = () => {
    const channel = createChannel(address);
    return {
      channel,
      client: createClientFactory().use(runtimeServerTokenMiddleware(tokenFile)).create(runtimeServerV1.RuntimeServerDefinition, channel),
    };
  };

  it('sends the token read from the file, and reads it once', async () => {
    expected.token = 'first';
    writeFileSync(tokenFile, 'first\n');
    const { channel, client: c } = client();
    await c.getExecution({ runUid: 'x', attempt: 1 });
    writeFileSync(tokenFile, 'ignored-while-accepted');
    await c.getExecution({ runUid: 'x', attempt: 1 });
    expect(seen).toEqual(['Bearer first', 'Bearer first']);
    expect(served).toBe(2);
    channel.close();
  });

  it('reads the file again when the server refuses (it restarted with a new token) and sends the call once more', async () => {
    expected.token = 'first';
    writeFileSync(tokenFile, 'first');
    const { channel, client: c } = client();
    await c.getExecution({ runUid: 'x', attempt: 1 });
    expected.token = 'second';
    writeFileSync(tokenFile, 'second');
    await c.getExecution({ runUid: 'x', attempt: 1 });
    expect(seen).toEqual(['Bearer first', 'Bearer first', 'Bearer second']);
    expect(served).toBe(2);
    channel.close();
  });

  it("gives up after the second refusal with the server's Unauthenticated", async () => {
    expected.token = 'unknowable';
    writeFileSync(tokenFile, 'wrong');
    const { channel, client: c } = client();
    await expect(c.getExecution({ runUid: 'x', attempt: 1 })).rejects.toMatchObject({ code: Status.UNAUTHENTICATED });
    expect(seen).toEqual(['Bearer wrong', 'Bearer wrong']);
    expect(served).toBe(0);
    channel.close();
  });
});
