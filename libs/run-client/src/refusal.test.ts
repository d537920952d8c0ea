import { ApiException } from '@kubernetes/client-node';
import { apiStatus, asWriteResult, isConflict, isDefiniteRefusal, isNotFound, refusalError, refusalFor } from './refusal.ts';
import type { ApiVerb, Refusal } from './refusal.ts';

const answered = (code: number): ApiException<unknown> => new ApiException(code, `HTTP ${code}`, {}, {});

describe('refusalFor', () => {
  const cases: [ApiVerb, number | undefined, Refusal | undefined][] = [
    ['get', 404, 'NotFound'],
    ['update', 404, 'NotFound'],
    ['delete', 404, 'NotFound'],
    ['update', 409, 'Conflict'],
    ['patch', 409, 'Conflict'],
    ['delete', 409, 'Conflict'],
    ['create', 409, 'AlreadyExists'],
    ['create', 404, 'NotFound'],
    ['update', 422, undefined],
    ['update', 403, undefined],
    ['update', 500, undefined],
    ['update', undefined, undefined],
  ];
  test.each(cases)('%s answered %s -> %s', (verb, status, refusal) => {
    expect(refusalFor(verb, status)).toBe(refusal);
  });
});

describe('the predicates', () => {
  const cases: [string, unknown, number | undefined, boolean, boolean, boolean][] = [
    ['404', answered(404), 404, true, false, true],
    ['409', answered(409), 409, false, true, true],
    ['403', answered(403), 403, false, false, true],
    ['500', answered(500), 500, false, false, false],
    ['no answer', new Error('ECONNRESET'), undefined, false, false, false],
    ['a code-like object', { code: 404 }, undefined, false, false, false],
  ];
  test.each(cases)('%s', (_name, error, status, notFound, conflict, definite) => {
    expect(apiStatus(error)).toBe(status);
    expect(isNotFound(error)).toBe(notFound);
    expect(isConflict(error)).toBe(conflict);
    expect(isDefiniteRefusal(error)).toBe(definite);
  });
});

describe('asWriteResult', () => {
  test('the object when the write succeeds', async () => {
    await expect(asWriteResult('update', ['Conflict'], () => Promise.resolve('stored'))).resolves.toEqual({ ok: true, object: 'stored' });
  });

  const handled: [ApiVerb, number, Refusal][] = [
    ['update', 409, 'Conflict'],
    ['update', 404, 'NotFound'],
    ['create', 409, 'AlreadyExists'],
  ];
  test.each(handled)('%s answered %s is the value %s, with its error', async (verb, code, reason) => {
    const error = answered(code);
    await expect(asWriteResult(verb, ['NotFound', 'Conflict', 'AlreadyExists'], () => Promise.reject(error))).resolves.toEqual({
      ok: false,
      reason,
      error,
    });
  });

  const thrown: [string, ApiVerb, readonly Refusal[], unknown][] = [
    ['a refusal the verb does not handle', 'create', ['AlreadyExists'], answered(404)],
    ['another status', 'update', ['NotFound', 'Conflict'], answered(422)],
    ['no answer', 'update', ['NotFound', 'Conflict'], new Error('timeout')],
  ];
  test.each(thrown)('%s is thrown unchanged', async (_name, verb, refusals, error) => {
    await expect(asWriteResult(verb, refusals, () => Promise.reject(error as Error))).rejects.toBe(error);
  });
});

describe('refusalError', () => {
  test("a write's refusal: the API server's answer itself", () => {
    const error = answered(409);
    expect(refusalError({ ok: false, reason: 'Conflict', error })).toBe(error);
  });
  test('a refusal without an answer: an Error naming it', () => {
    expect(refusalError({ ok: false, reason: 'NotFound' }).message).toBe('the API server refused: NotFound');
  });
});
