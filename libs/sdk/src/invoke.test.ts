import type { ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { BOUNDS } from '@kruntimes/api';
import { ERROR_CODES } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { HttpsStub, json, selfSignedCertificate } from '@kruntimes/testing';
import type { KeyPair, RecordedRequest, StubHandler } from '@kruntimes/testing';
import { InvocationError, InvocationTransportError } from './errors.ts';
import { invokeFunction, prepareInvocation } from './invoke.ts';
import type { InvokeOptions } from './invoke.ts';

const TOKEN = 'caller-token-secret';
const handler: { current: StubHandler } = { current: () => undefined };
let keys: KeyPair;
let other: KeyPair;
let stub: HttpsStub;

beforeAll(async () => {
  [keys, other] = await Promise.all([selfSignedCertificate('gateway'), selfSignedCertificate('someone-else')]);
  stub = await HttpsStub.start(keys, handler);
});
afterAll(async () => {
  await stub.close();
});
beforeEach(() => {
  stub.requests.length = 0;
});

function options(overrides: Partial<InvokeOptions> = {}): InvokeOptions {
  return { url: stub.url(), caBundle: stub.caBundle, token: TOKEN, payload: { n: 1 }, ...overrides };
}

async function failure(promise: Promise<unknown>): Promise<InvocationError | InvocationTransportError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof InvocationError || error instanceof InvocationTransportError) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

const succeed = (request: RecordedRequest, response: ServerResponse): void => {
  const payload = JSON.parse(request.body) as unknown;
  json(response, request, 200, {
    invocationId: request.headers['x-kruntime-invocation-id'],
    result: { echo: payload },
    outputs: { k: 'v' },
    stdout: 'out\n',
    attempt: 2,
  });
};

describe('invokeFunction against an HTTPS server answering like the gateway', () => {
  it('posts the payload with the token, content type and invocation ID, and returns the result', async () => {
    handler.current = succeed;
    const answer = await invokeFunction(options({ invocationId: 'inv-1' }));
    expect(answer).toEqual({
      invocationId: 'inv-1',
      result: { echo: { n: 1 } },
      outputs: { k: 'v' },
      stdout: 'out\n',
      attempt: 2,
      status: 200,
    });
    const [request] = stub.requests;
    expect(request).toMatchObject({ method: 'POST', url: '/v1/namespaces/ns/runtimes/py/functions/uid-1:invoke', body: '{"n":1}' });
    expect(request?.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      'x-kruntime-invocation-id': 'inv-1',
    });
  });

  it('generates a UUID invocation ID when none is given', async () => {
    handler.current = succeed;
    const answer = await invokeFunction(options());
    expect(answer.invocationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(stub.requests[0]?.headers['x-kruntime-invocation-id']).toBe(answer.invocationId);
  });

  it('sends raw JSON bytes as they are', async () => {
    handler.current = succeed;
    await invokeFunction(options({ payload: Buffer.from('[1, 2,  3]') }));
    expect(stub.requests[0]?.body).toBe('[1, 2,  3]');
  });

  it.each((Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].http >= 400))(
    'maps a gateway %s answer to an InvocationError',
    async (code) => {
      const spec = ERROR_CODES[code];
      handler.current = (request, response) => {
        json(response, request, spec.http, {
          invocationId: request.headers['x-kruntime-invocation-id'],
          error: { code, message: `m-${code}`, source: spec.source },
        });
      };
      const error = await failure(invokeFunction(options({ invocationId: 'inv-e' })));
      expect(error).toBeInstanceOf(InvocationError);
      expect(error).toMatchObject({ code, httpStatus: spec.http, source: spec.source, invocationId: 'inv-e', message: `m-${code}` });
    },
  );

  it('a function error says so', async () => {
    handler.current = (request, response) => {
      json(response, request, 500, {
        invocationId: 'x',
        error: { code: 'FunctionFailed', message: 'ZeroDivisionError', source: 'function' },
      });
    };
    const error = await failure(invokeFunction(options()));
    expect(error).toMatchObject({ code: 'FunctionFailed', source: 'function', httpStatus: 500 });
  });

  it('a 200 that is not an invocation result is an Internal error', async () => {
    handler.current = (request, response) => {
      json(response, request, 200, { hello: 'world' });
    };
    expect(await failure(invokeFunction(options()))).toMatchObject({ code: 'Internal', httpStatus: 200 });
  });

  it('refuses a server whose certificate does not chain to the caBundle, before sending', async () => {
    handler.current = succeed;
    const error = await failure(invokeFunction(options({ caBundle: Buffer.from(other.certPem).toString('base64') })));
    expect(error).toBeInstanceOf(InvocationTransportError);
    expect(error).toMatchObject({ kind: 'tls', requestMayHaveBeenSent: false });
    expect(stub.requests).toHaveLength(0);
  });

  it('without a caBundle, trusts only the system store (a self-signed gateway is refused)', async () => {
    const error = await failure(invokeFunction(options({ caBundle: undefined })));
    expect(error).toMatchObject({ kind: 'tls', requestMayHaveBeenSent: false });
  });

  it('a refused connection was not sent', async () => {
    const closed = await HttpsStub.start(keys, handler);
    const url = closed.url();
    await closed.close();
    const error = await failure(invokeFunction(options({ url })));
    expect(error).toMatchObject({ kind: 'connect', requestMayHaveBeenSent: false });
    expect(error.message).not.toContain(TOKEN);
  });

  it('a timeout after the request went out may have been sent', async () => {
    handler.current = () => undefined; // never answers
    const error = await failure(invokeFunction(options({ timeoutMs: 300, invocationId: 'slow' })));
    expect(error).toMatchObject({ kind: 'timeout', requestMayHaveBeenSent: true, invocationId: 'slow' });
  });

  it('a connection dropped without an answer may have been sent', async () => {
    handler.current = (_request, response) => {
      response.socket?.destroy();
    };
    expect(await failure(invokeFunction(options()))).toMatchObject({ kind: 'connection', requestMayHaveBeenSent: true });
  });

  it('an abort signal stops the call', async () => {
    handler.current = () => undefined;
    const controller = new AbortController();
    const pending = failure(invokeFunction(options({ signal: controller.signal })));
    setTimeout(() => {
      controller.abort();
    }, 100);
    expect(await pending).toMatchObject({ kind: 'aborted' });
    expect(await failure(invokeFunction(options({ signal: AbortSignal.abort() })))).toMatchObject({
      kind: 'aborted',
      requestMayHaveBeenSent: false,
    });
  });
});

/** A keep-alive agent that counts the connections it opened. */
class CountingAgent extends Agent {
  connections = 0;

  override createConnection(...args: Parameters<Agent['createConnection']>): ReturnType<Agent['createConnection']> {
    this.connections += 1;
    return super.createConnection(...args);
  }
}

describe('invokeFunction with a keep-alive agent (a Sandbox session)', () => {
  let agent: CountingAgent;
  beforeEach(() => {
    agent = new CountingAgent({ keepAlive: true, maxSockets: 1 });
  });
  afterEach(() => {
    agent.destroy();
  });

  it('reuses one connection for consecutive invocations', async () => {
    handler.current = succeed;
    for (let i = 0; i < 3; i += 1) {
      expect((await invokeFunction(options({ agent, payload: { i } }))).result).toEqual({ echo: { i } });
    }
    expect(agent.connections).toBe(1);
    expect(stub.requests).toHaveLength(3);
  });

  it('a reused connection dropped after the request was written may have been sent', async () => {
    handler.current = succeed;
    await invokeFunction(options({ agent }));
    handler.current = (_request, response) => {
      response.socket?.destroy();
    };
    const error = await failure(invokeFunction(options({ agent })));
    expect(error).toMatchObject({ kind: 'connection', requestMayHaveBeenSent: true });
    expect(agent.connections).toBe(1);
  });

  it('an invocation waiting for the busy connection was not sent when it is aborted', async () => {
    handler.current = (request, response) => {
      setTimeout(() => {
        succeed(request, response);
      }, 300);
    };
    const first = invokeFunction(options({ agent, invocationId: 'first' }));
    const controller = new AbortController();
    const queued = failure(invokeFunction(options({ agent, invocationId: 'queued', signal: controller.signal })));
    setTimeout(() => {
      controller.abort();
    }, 50);
    expect(await queued).toMatchObject({ kind: 'aborted', requestMayHaveBeenSent: false, invocationId: 'queued' });
    expect((await first).invocationId).toBe('first');
    expect(stub.requests.map((request) => request.headers['x-kruntime-invocation-id'])).toEqual(['first']);
  });
});

describe('prepareInvocation refuses, before sending', () => {
  const base: InvokeOptions = { url: 'https://gw.example/v1/x:invoke', token: 't', payload: null };
  it.each([
    ['a body over the request bound', { payload: 'x'.repeat(BOUNDS.requestBodyBytes) }, 'PayloadTooLarge'],
    ['raw bytes over the request bound', { payload: Buffer.alloc(BOUNDS.requestBodyBytes + 1, 0x20) }, 'PayloadTooLarge'],
    ['raw bytes that are not JSON', { payload: Buffer.from('{nope') }, 'InvalidRequest'],
    ['a payload that is not JSON', { payload: undefined }, 'InvalidRequest'],
    ['a payload JSON cannot hold', { payload: { count: 1n } }, 'InvalidRequest'],
    ['an invocation ID with a space', { invocationId: 'a b' }, 'InvalidInvocationId'],
    ['an empty invocation ID', { invocationId: '' }, 'InvalidInvocationId'],
    ['an invocation ID over 128 bytes', { invocationId: 'a'.repeat(129) }, 'InvalidInvocationId'],
    ['a plaintext URL', { url: 'http://gw.example/x' }, 'InvalidRequest'],
    ['a non-URL', { url: 'gateway' }, 'InvalidRequest'],
    ['an empty token', { token: '' }, 'InvalidRequest'],
    ['a caBundle that is not PEM', { caBundle: Buffer.from('hello').toString('base64') }, 'InvalidRequest'],
  ] as const)('%s', (_name, overrides, code) => {
    let thrown: unknown;
    try {
      prepareInvocation({ ...base, ...overrides });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvocationError);
    expect(thrown).toMatchObject({ code, httpStatus: undefined, local: true });
  });

  it('accepts a body exactly at the bound', () => {
    const payload = 'x'.repeat(BOUNDS.requestBodyBytes - 2);
    expect(prepareInvocation({ ...base, payload }).body.length).toBe(BOUNDS.requestBodyBytes);
  });

  it('the oversized payload never reaches the server', async () => {
    handler.current = succeed;
    const error = await failure(invokeFunction(options({ payload: 'x'.repeat(BOUNDS.requestBodyBytes) })));
    expect(error).toMatchObject({ code: 'PayloadTooLarge' });
    expect(stub.requests).toHaveLength(0);
  });
});
