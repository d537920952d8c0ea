import { isKruntimesError } from '@kruntimes/errors';
import { bearerToken } from './bearer-token.ts';

const outcome = (header: string | undefined): string => {
  try {
    return `token ${bearerToken(header)}`;
  } catch (error) {
    if (!isKruntimesError(error)) throw error;
    return error.code;
  }
};

describe('bearerToken', () => {
  it.each<[string | undefined, string]>([
    ['Bearer abc.def-ghi_jkl', 'token abc.def-ghi_jkl'],
    ['bearer tok==', 'token tok=='],
    ['BEARER tok', 'token tok'],
    ['Bearer  spaced ', 'token spaced'],
    ['Bearer eyJhbGciOi.JSUzI1-NiIs_In~R5cCI6+/IkpXVCJ9==', 'token eyJhbGciOi.JSUzI1-NiIs_In~R5cCI6+/IkpXVCJ9=='],
    [undefined, 'Unauthenticated'],
    ['', 'Unauthenticated'],
    ['Basic dXNlcjpwdw==', 'Unauthenticated'],
    ['Bearer', 'Unauthenticated'],
    ['Bearer ', 'Unauthenticated'],
    ['Bearer two words', 'Unauthenticated'],
    ['Bearertok', 'Unauthenticated'],
  ])('%j -> %s', (header, expected) => {
    expect(outcome(header)).toBe(expected);
  });

  it('never echoes the credential in its message', () => {
    expect(() => bearerToken('Token secret-value')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret-value') as unknown }) as Error,
    );
  });
});
