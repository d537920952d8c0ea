import { BOUNDS } from './bounds.ts';
import {
  isDns1123Label,
  isUid,
  isValidInvocationId,
  parseDurationSeconds,
  truncateUtf8,
  utf8ByteLength,
  validateOutputs,
} from './validation.ts';

describe('parseDurationSeconds', () => {
  it.each([
    ['90s', 90],
    ['10m', 600],
    ['1h30m', 5400],
    ['1h0m5s', 3605],
    ['0s', 0],
  ])('%s is %d seconds', (input, seconds) => {
    expect(parseDurationSeconds(input)).toBe(seconds);
  });

  it.each(['', '5', '1d', '1m1h', '-5s', '1.5h', ' 5s'])('rejects %j', (input) => {
    expect(parseDurationSeconds(input)).toBeUndefined();
  });
});

describe('names and identifiers', () => {
  it.each([
    ['python', true],
    ['py-3', true],
    ['-py', false],
    ['Py', false],
    ['a'.repeat(63), true],
    ['a'.repeat(64), false],
  ])('isDns1123Label(%j) is %s', (input, valid) => {
    expect(isDns1123Label(input)).toBe(valid);
  });

  it.each([
    ['2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6', true],
    ['2C24C1F0-9F8F-4F80-82D5-3DD16A12D1E6', false],
    ['2c24c1f0', false],
  ])('isUid(%j) is %s', (input, valid) => {
    expect(isUid(input)).toBe(valid);
  });

  it.each([
    ['inv-1', true],
    ['x'.repeat(BOUNDS.invocationIdBytes), true],
    ['x'.repeat(BOUNDS.invocationIdBytes + 1), false],
    ['', false],
    ['has space', false],
    ['tab\t', false],
    ['é', false],
  ])('isValidInvocationId(%j) is %s', (input, valid) => {
    expect(isValidInvocationId(input)).toBe(valid);
  });
});

describe('validateOutputs', () => {
  it('accepts outputs within every bound', () => {
    const outputs = Object.fromEntries(
      Array.from({ length: BOUNDS.outputCount }, (_, i) => [`key_${i}`, 'v'.repeat(BOUNDS.outputValueBytes)]),
    );
    expect(validateOutputs(outputs)).toEqual([]);
  });

  it.each([
    ['too many keys', Object.fromEntries(Array.from({ length: BOUNDS.outputCount + 1 }, (_, i) => [`k${i}`, 'v'])), 'outputs'],
    ['a key that is too long', { ['k'.repeat(BOUNDS.outputKeyBytes + 1)]: 'v' }, 'outputs['],
    ['a key with a bad character', { 'bad key': 'v' }, 'outputs['],
    ['a value over the byte bound (multi-byte)', { big: 'é'.repeat(BOUNDS.outputValueBytes / 2 + 1) }, 'outputs.big'],
  ])('rejects %s', (_name, outputs, field) => {
    const violations = validateOutputs(outputs);
    expect(violations).not.toHaveLength(0);
    expect(violations[0]?.field.startsWith(field)).toBe(true);
  });
});

describe('truncateUtf8', () => {
  it('keeps a short value', () => {
    expect(truncateUtf8('hello', 10)).toEqual({ value: 'hello', truncated: false });
  });

  it('cuts on a character boundary and marks the cut within the byte bound', () => {
    const { value, truncated } = truncateUtf8('€'.repeat(100), 50);
    expect(truncated).toBe(true);
    expect(utf8ByteLength(value)).toBeLessThanOrEqual(50);
    expect(value).toMatch(/^€+…\[truncated\]$/);
  });
});
