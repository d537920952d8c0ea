import { Readable } from 'node:stream';
import { BOUNDS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { CliError } from '../exit-codes.ts';
import { DEFAULT_PAYLOAD, notInvocable, readPayload, viaGateway } from './invoke.ts';

const noStdin = { stdin: Readable.from([]) };

describe('readPayload', () => {
  it('sends {} when no payload is given', async () => {
    expect(await readPayload({ kind: 'none' }, noStdin)).toEqual(DEFAULT_PAYLOAD);
  });

  it('sends --data as given after checking it is JSON', async () => {
    expect((await readPayload({ kind: 'data', json: ' [1, 2] ' }, noStdin)).toString()).toBe(' [1, 2] ');
    await expect(readPayload({ kind: 'data', json: '{a:1}' }, noStdin)).rejects.toThrow(/--data is not JSON/);
  });

  it('reads a file, and says which one it could not read', async () => {
    expect((await readPayload({ kind: 'file', path: 'p.json' }, noStdin, () => Promise.resolve(Buffer.from('"x"')))).toString()).toBe(
      '"x"',
    );
    const error = await readPayload({ kind: 'file', path: '/nope.json' }, noStdin, () => Promise.reject(new Error('ENOENT'))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    expect((error as CliError).message).toMatch('/nope.json');
  });

  it('reads stdin, and stops one byte past the bound', async () => {
    expect((await readPayload({ kind: 'stdin' }, { stdin: Readable.from([Buffer.from('{"a"'), ':1}']) })).toString()).toBe('{"a":1}');
    const big = Buffer.alloc(BOUNDS.requestBodyBytes, 0x20);
    const read = await readPayload({ kind: 'stdin' }, { stdin: Readable.from([big, big, big]) });
    expect(read.length).toBe(BOUNDS.requestBodyBytes + 1);
  });
});

describe('notInvocable', () => {
  const base: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'fn' },
    spec: { runtime: 'py', source: { inline: 'x' }, mode: { function: { handler: 'h' } } },
  };
  const readyCondition = {
    type: 'Ready',
    status: 'True' as const,
    reason: 'FunctionRegistered',
    message: '',
    lastTransitionTime: '2026-12-02T00:00:00Z',
  };
  const endpoint = { protocol: 'HTTPS' as const, url: 'https://gw/x' };

  it('accepts a Ready function Run with its Ready condition and an endpoint', () => {
    expect(notInvocable({ ...base, status: { phase: 'Ready', conditions: [readyCondition], endpoint } })).toBeUndefined();
  });

  it.each([
    ['a task Run', { ...base, spec: { ...base.spec, mode: { task: {} } } }, 2, /task Run/],
    ['a Pending Run', base, 5, /phase Pending/],
    ['a Ready Run without its condition', { ...base, status: { phase: 'Ready', endpoint } }, 5, /does not accept/],
    [
      'a Ready Run being deleted',
      { ...base, metadata: { name: 'fn', deletionTimestamp: 'x' }, status: { phase: 'Ready', conditions: [readyCondition], endpoint } },
      5,
      /does not accept/,
    ],
    ['a Ready Run without an endpoint', { ...base, status: { phase: 'Ready', conditions: [readyCondition] } }, 5, /does not accept/],
    ['a finished Run', { ...base, status: { phase: 'Cancelled', reason: 'Cancelled' } }, 5, /phase Cancelled, Cancelled/],
  ] as [string, Run, number, RegExp][])('refuses %s', (_name, run, exitCode, message) => {
    const refusal = notInvocable(run);
    expect(refusal?.exitCode).toBe(exitCode);
    expect(refusal?.message).toMatch(message);
  });
});

describe('viaGateway', () => {
  const endpoint = 'https://runtime-gateway.kruntimes-system.svc/v1/namespaces/ns/runtimes/py/functions/u-1:invoke';
  it('keeps the endpoint without --gateway', () => {
    expect(viaGateway(endpoint, undefined)).toBe(endpoint);
  });
  it('replaces only the origin', () => {
    expect(viaGateway(endpoint, 'https://127.0.0.1:8443')).toBe('https://127.0.0.1:8443/v1/namespaces/ns/runtimes/py/functions/u-1:invoke');
  });
});
