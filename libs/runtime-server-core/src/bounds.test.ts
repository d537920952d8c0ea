import { isKruntimesError } from '@kruntimes/errors';
import { BoundedCapture } from './bounded-capture.ts';
import { parseOutputs } from './outputs-file.ts';
import { LineSplitter } from './line-splitter.ts';
import { checkListenAddress } from './listen-address.ts';

describe('BoundedCapture', () => {
  it.each([
    ['under the bound', ['abc'], 8, { data: 'abc', truncated: false, totalBytes: 3 }],
    ['exactly the bound', ['abcd', 'efgh'], 8, { data: 'abcdefgh', truncated: false, totalBytes: 8 }],
    ['over the bound', ['abcd', 'efgh', 'ij'], 8, { data: 'abcdefgh', truncated: true, totalBytes: 10 }],
    ['never splits a character', ['aa€'], 4, { data: 'aa', truncated: true, totalBytes: 5 }],
    ['keeps a whole character at the cut', ['a€b'], 4, { data: 'a€', truncated: true, totalBytes: 5 }],
  ])('%s', (_name, chunks, max, expected) => {
    const capture = new BoundedCapture(max);
    for (const chunk of chunks) capture.write(Buffer.from(chunk));
    expect(capture.result()).toEqual(expected);
  });
});

describe('LineSplitter', () => {
  it.each<[string, string[], { text: string; truncated: boolean }[]]>([
    [
      'splits lines across chunks',
      ['a\nb', 'c\n'],
      [
        { text: 'a', truncated: false },
        { text: 'bc', truncated: false },
      ],
    ],
    [
      'keeps an unterminated last line',
      ['a\nb'],
      [
        { text: 'a', truncated: false },
        { text: 'b', truncated: false },
      ],
    ],
    ['strips CR of CRLF', ['a\r\n'], [{ text: 'a', truncated: false }]],
    [
      'keeps empty lines',
      ['\n\n'],
      [
        { text: '', truncated: false },
        { text: '', truncated: false },
      ],
    ],
    [
      'cuts a long line and skips to its newline',
      ['0123456789', 'abc\nok\n'],
      [
        { text: '01234', truncated: true },
        { text: 'ok', truncated: false },
      ],
    ],
    [
      'cuts a long line ending in the same chunk',
      ['0123456789\nok'],
      [
        { text: '01234', truncated: true },
        { text: 'ok', truncated: false },
      ],
    ],
    ['drops the rest of an unterminated long line', ['0123456789'], [{ text: '01234', truncated: true }]],
  ])('%s', (_name, chunks, expected) => {
    const splitter = new LineSplitter(5);
    const lines = chunks.flatMap((chunk) => splitter.push(Buffer.from(chunk)));
    expect([...lines, ...splitter.end()]).toEqual(expected);
  });
});

describe('parseOutputs', () => {
  it.each<[string, string, { outputs: Record<string, string>; error: string | RegExp }]>([
    ['valid', '{"a":"1","b.c":"x"}', { outputs: { a: '1', 'b.c': 'x' }, error: '' }],
    ['not JSON', '{', { outputs: {}, error: 'outputs file is not JSON' }],
    ['an array', '[]', { outputs: {}, error: 'outputs file must hold a JSON object of strings' }],
    ['a number value', '{"a":1}', { outputs: {}, error: 'outputs values must be strings' }],
    ['a bad key', '{"1a":"x"}', { outputs: {}, error: /key must match/ }],
    [
      'too many',
      JSON.stringify(Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']))),
      { outputs: {}, error: /17 outputs/ },
    ],
    ['a value over the bound', JSON.stringify({ a: 'x'.repeat(4097) }), { outputs: {}, error: /exceeds 4096 bytes/ }],
  ])('%s', (_name, text, expected) => {
    const parsed = parseOutputs(text);
    expect(parsed.outputs).toEqual(expected.outputs);
    if (typeof expected.error === 'string') expect(parsed.error).toBe(expected.error);
    else expect(parsed.error).toMatch(expected.error);
  });
});

describe('checkListenAddress', () => {
  it.each([
    ['127.0.0.1:7450', true],
    ['127.0.0.42:0', true],
    ['localhost:7450', true],
    ['[::1]:7450', true],
    ['unix:/run/kruntimes/rs.sock', true],
    ['0.0.0.0:7450', false],
    ['10.0.0.1:7450', false],
    ['[::]:7450', false],
    ['example.com:7450', false],
    ['127.0.0.1', false],
    ['unix:', false],
    ['127.0.0.1:70000', false],
  ])('%s -> %s', (address, ok) => {
    let accepted = true;
    try {
      checkListenAddress(address);
    } catch (error) {
      if (!isKruntimesError(error, 'InvalidRequest')) throw error;
      accepted = false;
    }
    expect(accepted).toBe(ok);
  });
});
